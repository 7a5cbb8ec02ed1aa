import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { ALLOWED_SCANS } from "./allowed-scans";
import { callSites, reached, scan } from "./call-sites";
import {
	BOUNDED_TABLES,
	type Condition,
	explainAll,
	GROWING_TABLES,
	ledgerIndexes,
	type Plan,
	parameterCount,
	schemaTables,
} from "./plans";
import { type Recorded, recordedStatements, startRecording } from "./recorder";
import { SEEDED, SEEDED_GATE } from "./seeded-ledger";
import { tour } from "./tour";

/**
 * The query-plan guard (issue 19): every SQL statement the service sends to
 * D1 and every statement a UserLedger runs on its own SQLite is recorded on
 * a scripted tour of the service (tour.ts), explained with EXPLAIN QUERY PLAN
 * against the migrated schemas, and must not scan a table that grows with use
 * unless allowed-scans.ts says why that scan stays small. A static scan of
 * src/db/ and src/ledger/ makes sure the tour reached every call site, so a
 * new statement is checked even before a test sends it.
 */

const squash = (sql: string) => sql.replace(/\s+/g, " ").trim();
const describePlan = (p: Plan) =>
	`${p.statement.file} (${p.condition}): ${p.scans.map((s) => s.detail).join("; ")}\n    ${squash(p.statement.sql).slice(0, 300)}`;

describe("query plans", { timeout: 120_000 }, () => {
	let statements: Recorded[] = [];
	/** Each statement's plan against the schema alone with NULL parameters (the guard's first condition). */
	let plans: Plan[] = [];
	/** With the parameters the tour sent, then also under statistics of a large database (plans.ts, Condition). */
	let recordedPlans: Plan[] = [];
	let largePlans: Plan[] = [];
	/** The objects' statements, with the parameters sent, in an analyzed ledger holding a referrer's friends and rewards, and a gate holding events. */
	let seededPlans: Plan[] = [];

	beforeAll(async () => {
		await startRecording();
		await tour();
		statements = recordedStatements();
		plans = await explainAll(statements, ALLOWED_SCANS);
		recordedPlans = await explainAll(statements, ALLOWED_SCANS, "recorded");
		largePlans = await explainAll(statements, ALLOWED_SCANS, "large");
		seededPlans = await explainAll(statements, ALLOWED_SCANS, "seeded");
	}, 120_000);

	it("reaches every D1 and ledger call site of src/db and src/ledger", () => {
		const sites = callSites();
		expect(sites.length).toBeGreaterThan(150);
		const missed = sites.filter((site) => !reached(site, statements)).map((site) => `${site.where} ${site.fragments?.[0] ?? ""}`);
		// A new call site fails here until the tour (tour.ts) reaches it, so its plan is checked.
		expect(missed, `call sites the tour never reached:\n${missed.join("\n")}`).toEqual([]);
	});

	it("knows every table of both schemas as growing or bounded", async () => {
		const tables = await schemaTables();
		for (const engine of ["d1", "shard", "ledger", "gate"] as const) {
			const known = new Set([...GROWING_TABLES[engine], ...BOUNDED_TABLES[engine]]);
			expect(
				tables[engine].filter((t) => !known.has(t)),
				`${engine} tables to classify in plans.ts`,
			).toEqual([]);
		}
	});

	it("scans no growing table, except the allowed scans", () => {
		const failing = plans.filter((p) => p.scans.length > 0).map(describePlan);
		expect(failing, `statements that scan a growing table:\n${failing.join("\n")}`).toEqual([]);
		expect(plans.length).toBeGreaterThan(150);
	});

	it("scans no growing table with the parameters sent, nor under statistics of a large database, except the allowed scans", () => {
		const failing = [...recordedPlans, ...largePlans, ...seededPlans].filter((p) => p.scans.length > 0).map(describePlan);
		expect(failing, `statements that scan a growing table:\n${failing.join("\n")}`).toEqual([]);
		// Every statement is explained in both conditions, most with what the tour sent (a statement without parameters has none).
		for (const explained of [recordedPlans, largePlans])
			expect(new Set(explained.map((p) => p.statement))).toEqual(new Set(plans.map((p) => p.statement)));
		expect(new Set(seededPlans.map((p) => p.statement))).toEqual(
			new Set(plans.filter((p) => p.statement.engine === "ledger" || p.statement.engine === "gate").map((p) => p.statement)),
		);
		const withParams = statements.filter((s) => (s.params?.length ?? 0) > 0);
		expect(withParams.length).toBeGreaterThan(plans.length / 2);
		// Every statement that takes parameters was explained with what it was sent, not with NULLs.
		const unsent = plans.filter((p) => parameterCount(p.statement.sql) > 0 && !p.statement.params?.length).map((p) => p.statement.file);
		expect(unsent).toEqual([]);
		// The shards' statements (the superuser's view of the pool) take no parameter.
		for (const engine of ["d1", "ledger", "gate"] as const)
			expect(
				withParams.some((s) => s.engine === engine),
				`${engine} statements recorded with their parameters`,
			).toBe(true);
	});

	it("explains the objects' statements in a ledger and a gate holding data, analyzed (the seeded condition)", async () => {
		const counts = (sql: SqlStorage, tables: string[]) =>
			Object.fromEntries(tables.map((t) => [t, sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n]));
		await runInDurableObject(ledgerFor(env, "plan-explain", "seeded"), (_instance, state) => {
			expect(counts(state.storage.sql, ["rewards", "friends", "sqlite_stat1"])).toMatchObject({
				rewards: SEEDED.rewards,
				friends: SEEDED.friends,
			});
			expect(state.storage.sql.exec("SELECT stat FROM sqlite_stat1 WHERE idx = 'rewards_rule_friend_event'").one().stat).toMatch(/^2400 /);
		});
		await runInDurableObject(env.EVENT_GATE.getByName("plan-explain-seeded"), (_instance, state) => {
			expect(counts(state.storage.sql, ["events", "pending"])).toEqual({ events: SEEDED_GATE.events, pending: SEEDED_GATE.pending });
			expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM sqlite_stat1 WHERE tbl = 'events'").one().n).toBeGreaterThan(0);
		});
	});

	it("fails the friends page's join as first written (statistics of a large or of an analyzed ledger) and as on main (analyzed), passes it as sent", async () => {
		// The friends page's rewards (ledger/reads.ts) as sent: friends, rules and rewards CROSS joined, `+n.usertype`.
		const page = statements.find((s) => s.file === "src/ledger/reads.ts" && /CROSS JOIN rules CROSS JOIN rewards n\b/.test(s.sql));
		expect(page?.params?.length).toBeGreaterThan(0);
		if (!page) return;
		// As on main before the seeded condition: `n.usertype`, which SQLite may key an automatic index on.
		const keyed: Recorded = { ...page, sql: page.sql.replace("+n.usertype", "n.usertype") };
		// As first written (issue 49, schema step 16): joined plainly instead of CROSS, so the planner orders them.
		const unpinned: Recorded = { ...keyed, sql: keyed.sql.replace("CROSS JOIN rules CROSS JOIN rewards n", "JOIN rules JOIN rewards n") };
		expect(new Set([page.sql, keyed.sql, unpinned.sql]).size).toBe(3);
		const scansOf = async (s: Recorded, condition: Condition) =>
			new Set((await explainAll([s], ALLOWED_SCANS, condition)).flatMap((p) => p.scans.map((scan) => `${scan.table}: ${scan.detail}`)));
		// An index built from every Referrer reward of the ledger, on each page.
		const everyReward = new Set(["rewards: SEARCH n USING AUTOMATIC PARTIAL COVERING INDEX (usertype=?)"]);
		// Against the schema alone, with NULLs or with the page's parameters, every table is sought: the first guard passed both.
		for (const condition of ["empty", "recorded"] as const) {
			expect(await scansOf(unpinned, condition)).toEqual(new Set());
			expect(await scansOf(keyed, condition)).toEqual(new Set());
		}
		expect(await scansOf(unpinned, "large")).toEqual(everyReward);
		expect(await scansOf(unpinned, "seeded")).toEqual(everyReward);
		// Pinned by CROSS JOIN, the usertype term still draws the automatic index once a ledger of 2,400 rewards is analyzed.
		expect(await scansOf(keyed, "large")).toEqual(new Set());
		expect(await scansOf(keyed, "seeded")).toEqual(everyReward);
		// The page as sent seeks (rule, friend) in every condition.
		for (const condition of ["empty", "recorded", "large", "seeded"] as const)
			for (const plan of await explainAll([page], ALLOWED_SCANS, condition)) {
				expect(plan.scans).toEqual([]);
				expect(plan.details).toContain("SEARCH n USING INDEX rewards_rule_friend_event (ruleid=? AND friend_userkey=?)");
			}
	});

	it("reads a leaderboard rank from the levels above and the tie slices ahead, never a user nor a tie per row ahead (issue 34)", () => {
		const standings = plans.filter((p) => p.statement.file === "src/db/leaderboard.ts" && /\bAS rank\b/.test(p.statement.sql));
		expect(standings.length).toBeGreaterThan(0);
		for (const p of standings) {
			const where = p.details.join("\n");
			// The user asked for, and its own counter row: one seek each.
			expect(where).toMatch(/SEARCH u USING INDEX/);
			// The referrers with more friends: a range of the levels' primary key (one row per distinct count).
			expect(where).toContain("SEARCH l USING PRIMARY KEY (appid=? AND campaignid=? AND bucket=? AND friends>?)");
			// Its ties that reached the count first (migration 0033): per slice width, a range of the slices of its count
			// inside its own slice of the width above (at most 12 months, 31 days, ...), never all its ties.
			// The widths drive the seeks (CROSS JOIN): one seek per width, never every slice of the count.
			const slices = p.details.filter((d) => /^(SEARCH t|SCAN w)\b/.test(d));
			expect(slices, where).toEqual([
				"SCAN w",
				"SEARCH t USING PRIMARY KEY (appid=? AND campaignid=? AND bucket=? AND friends=? AND width=? AND slice>? AND slice<?)",
			]);
			// Whether its level has tie slices (migration 0035): its one levels row, by the primary key.
			expect(where).toContain("SEARCH v USING PRIMARY KEY (appid=? AND campaignid=? AND bucket=? AND friends=?)");
			// Then the ties inside its own second (a level with slices): a range of the covering index bounded on both
			// sides; or the ties of a level without slices (fewer than TIE_SLICES_FROM referrers, 1,024, since the write
			// that brings a level there gives it slices): the range of its count before the user, under 1,024 entries.
			const ahead = [...new Set(p.details.filter((d) => /^SEARCH c /.test(d)))];
			expect(ahead, where).toEqual([
				"SEARCH c USING COVERING INDEX leaderboard_counts_rank (appid=? AND campaignid=? AND bucket=? AND friends=? AND reached_at>? AND reached_at<?)",
				"SEARCH c USING COVERING INDEX leaderboard_counts_rank (appid=? AND campaignid=? AND bucket=? AND friends=? AND reached_at<?)",
			]);
			// No table read per row ahead: users is read once, for the user asked for.
			expect(p.details.filter((d) => /\busers\b|SEARCH o\b/.test(d)).length, where).toBeLessThanOrEqual(1);
		}
	});

	it("finds a user's leaderboard counters on the table's own key, without a user index (issue 33, migration 0036)", async () => {
		const { results } = await env.DB.prepare(
			"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'leaderboard_counts' AND sql IS NOT NULL",
		).all<{ name: string }>();
		expect(results.map((r) => r.name)).toEqual(["leaderboard_counts_rank"]);
		// (An erasure's, on DB or a user's home shard; a sharded test twin's rounds are a range of the key's appid.)
		const erasure = plans.filter((p) => /^DELETE FROM leaderboard_counts WHERE appid = \? AND userkey = \?/.test(p.statement.sql));
		expect(erasure.length).toBeGreaterThan(0);
		for (const p of erasure) expect(p.details).toEqual(["SEARCH leaderboard_counts USING PRIMARY KEY (appid=? AND userkey=?)"]);
		// Every read of one counter (a standing's own row, the flush's guards) seeks the whole key.
		const counterSeeks = plans.flatMap((p) => p.details).filter((d) => /USING PRIMARY KEY \(appid=\? AND userkey=\?/.test(d));
		expect(counterSeeks.length).toBeGreaterThan(0);
		for (const d of counterSeeks)
			expect(d).toMatch(/PRIMARY KEY \(appid=\? AND userkey=\?( AND campaignid=\? AND bucket=\?)?\)( LEFT-JOIN)?$/);
	});

	it("sums a projection batch's leaderboard counters by key (issue 33, db/leaderboard-batch.ts)", () => {
		const sums = plans.filter((p) => p.statement.file === "src/db/leaderboard-batch.ts");
		// Two on DB (an app in the "one" layout), two on a shard (a sharded app, issue 50 phase 2b-1).
		expect(sums.filter((p) => p.statement.engine === "d1").length).toBe(2);
		const onShard = sums.filter((p) => p.statement.engine === "shard");
		expect(onShard.length).toBe(2);
		for (const p of onShard) {
			const where = p.details.join("\n");
			// The same seeks: the projected row by the reward id (the shard's WITHOUT ROWID primary key), the referrer's
			// other live rewards, the erased guard on the shard's erased_owners, each counter by its primary key.
			expect(where).toContain("SEARCH p USING PRIMARY KEY (rewarddtlid=?) LEFT-JOIN");
			expect(where).toContain("SEARCH o USING INDEX rewards_referrer_friend");
			expect(where).toContain("SEARCH e USING PRIMARY KEY (appid=? AND userkey=?)");
			expect(
				p.details.filter((d) => /^SCAN (?!r VIRTUAL|b VIRTUAL|\(subquery-\d+\)$|moving$|g$)/.test(d)),
				where,
			).toEqual([]);
		}
		for (const p of sums.filter((p) => p.statement.engine === "d1")) {
			const where = p.details.join("\n");
			// Per reward and bucket of the JSON parameter: its projected row, the referrer's other live rewards for its
			// friend in the bucket, whether the referrer is erased; one seek each, never a range of the referrer's rewards.
			expect(where).toContain("SEARCH p USING INDEX sqlite_autoindex_rewards_1 (rewarddtlid=?) LEFT-JOIN");
			expect(where).toContain(
				"SEARCH o USING INDEX rewards_referrer_friend (appid=? AND userkey=? AND friend_userkey=? AND campaignid=? AND created_at>? AND created_at<?)",
			);
			expect(where).toContain("SEARCH u USING INDEX sqlite_autoindex_users_1 (userkey=?)");
			// Then per counter: its row, by the whole primary key.
			expect(where).toMatch(
				/^SEARCH (k|leaderboard_counts) USING PRIMARY KEY \(appid=\? AND userkey=\? AND campaignid=\? AND bucket=\?\)/m,
			);
			// Nothing scanned but the JSON parameter and the batch's own intermediate rows.
			expect(
				p.details.filter((d) => /^SCAN (?!r VIRTUAL|b VIRTUAL|\(subquery-\d+\)$|moving$|g$)/.test(d)),
				where,
			).toEqual([]);
		}
	});

	it("moves the leaderboard's maintained counters by key: every statement of the triggers on its counters (issue 34)", async () => {
		// The triggers of migration 0035 (levels and tie slices, one trigger per event) run inside the flush's upserts and
		// an erasure's delete, where EXPLAIN of the statement that fires them does not show them: each statement is
		// explained on its own, with its NEW and OLD values as parameters.
		const { results } = await env.DB.prepare(
			"SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'leaderboard_counts'",
		).all<{ name: string; sql: string }>();
		expect(results.map((r) => r.name).sort()).toEqual([
			"leaderboard_counts_delete",
			"leaderboard_counts_insert",
			"leaderboard_counts_update",
		]);
		const bodies: Recorded[] = results.flatMap(({ name, sql }) =>
			(/\bBEGIN\b([\s\S]*)\bEND\s*$/i.exec(sql)?.[1] ?? "")
				.split(";")
				.map((s) => s.trim())
				.filter(Boolean)
				.map((s) => ({ engine: "d1" as const, file: `migrations: trigger ${name}`, sql: s.replace(/\b(NEW|OLD)\.\w+/g, "?") })),
		);
		expect(bodies.length).toBe(14);
		const triggerPlans = await explainAll(bodies, ALLOWED_SCANS);
		expect(triggerPlans.filter((p) => p.scans.length > 0).map(describePlan)).toEqual([]);
		for (const p of triggerPlans) {
			const where = p.details.join("\n");
			// An update finds its one level by the primary key; a delete of emptied slices seeks each (width, slice)
			// pair of the primary key, never a range of slices; an insert reads only the list of slice widths and
			// resolves its conflict on the primary key.
			if (/^UPDATE/.test(p.statement.sql))
				expect(where).toMatch(/^SEARCH leaderboard_levels USING PRIMARY KEY \(appid=\? AND campaignid=\? AND bucket=\? AND friends=\?\)$/m);
			else if (/^DELETE/.test(p.statement.sql))
				expect(where).toMatch(
					/^SEARCH leaderboard_ties USING PRIMARY KEY \(appid=\? AND campaignid=\? AND bucket=\? AND friends=\? AND width=\? AND slice=\?\)$/m,
				);
			else expect(p.statement.sql).toMatch(/ON CONFLICT \(appid, campaignid, bucket, friends(, width, slice)?\) DO UPDATE/);
			// Whether a level has slices: its levels row by the primary key.
			if (/\bl\.ties = /.test(p.statement.sql))
				expect(where).toMatch(/^SEARCH l (EXISTS )?USING PRIMARY KEY \(appid=\? AND campaignid=\? AND bucket=\? AND friends=\?\)$/m);
			// The count of a level's slices when a write brings it to TIE_SLICES_FROM referrers (once per level): the
			// range of its count on the rank index, about 1,024 entries, driven by the level's row (CROSS JOIN), so a
			// write that does not bring its level there reads no counter.
			if (/CROSS JOIN leaderboard_counts c\b/.test(p.statement.sql))
				expect(p.details.slice(0, 2), where).toEqual([
					"SEARCH l USING PRIMARY KEY (appid=? AND campaignid=? AND bucket=? AND friends=?)",
					"SEARCH c USING COVERING INDEX leaderboard_counts_rank (appid=? AND campaignid=? AND bucket=? AND friends=?)",
				]);
			if (/CROSS JOIN leaderboard_counts c\b/.test(p.statement.sql))
				expect(where).toMatch(
					/^SEARCH c USING COVERING INDEX leaderboard_counts_rank \(appid=\? AND campaignid=\? AND bucket=\? AND friends=\?\)$/m,
				);
			// Nothing is scanned but the six slice widths (a fixed table).
			expect(
				p.details.filter((d) => /^SCAN (?!CONSTANT ROW$|w$|leaderboard_tie_widths$)/.test(d)),
				where,
			).toEqual([]);
		}
	});

	it("creates no ledger index that no query uses (a new ledger pays for each)", async () => {
		const used = new Set(
			plans.filter((p) => p.statement.engine === "ledger").flatMap((p) => p.details.map((d) => /INDEX (\w+)/.exec(d)?.[1] ?? "")),
		);
		expect((await ledgerIndexes()).filter((name) => !used.has(name))).toEqual([]);
	});

	it("keeps no allowed scan that nothing sends any more", () => {
		const used = new Set(plans.flatMap((p) => p.allowed));
		expect(ALLOWED_SCANS.filter((a) => !used.has(a))).toEqual([]);
	});

	it("fails an unindexed statement, of D1 or of a ledger (a throw-away example)", async () => {
		const unindexed: Recorded[] = [
			{ engine: "d1", file: "src/db/throwaway.ts", sql: "SELECT userkey FROM users WHERE name = ? AND appid IS NOT NULL" },
			{ engine: "d1", file: "src/db/throwaway.ts", sql: "DELETE FROM conversion_events WHERE created_at < ?" },
			{ engine: "ledger", file: "src/ledger/throwaway.ts", sql: "SELECT * FROM rewards r WHERE r.eventname = ?" },
			// An alias after a chain of plain joins (`JOIN m2 JOIN rewards n`) names its table too.
			{
				engine: "ledger",
				file: "src/ledger/throwaway.ts",
				sql: "SELECT n.seq FROM meta m JOIN meta m2 JOIN rewards n WHERE n.eventname = m.value AND m2.key = ?",
			},
		];
		const flagged = await explainAll(unindexed, ALLOWED_SCANS);
		expect(flagged.map((p) => p.scans.map((s) => s.table))).toEqual([["users"], ["conversion_events"], ["rewards"], ["rewards"]]);
		// Indexed twins pass.
		const indexed: Recorded[] = [
			{ engine: "d1", file: "src/db/throwaway.ts", sql: "SELECT userkey FROM users WHERE appid = ? AND email = ?" },
			{
				engine: "ledger",
				file: "src/ledger/throwaway.ts",
				sql: "SELECT * FROM rewards WHERE ruleid = ? AND friend_userkey = ? ORDER BY seq",
			},
		];
		expect((await explainAll(indexed, ALLOWED_SCANS)).flatMap((p) => p.scans)).toEqual([]);
	});

	it("explains statements sent to a shard against the shard schema (issue 50)", async () => {
		const onShards = plans.filter((p) => p.statement.engine === "shard");
		// The superuser's view of the pool reads each shard's identity and migrations there, never on DB.
		expect(onShards.map((p) => p.statement.file)).toContain("src/db/shard-status.ts");
		expect(plans.filter((p) => p.statement.engine === "d1" && p.statement.file === "src/db/shard-status.ts")).toEqual([]);
		// The directory is the control database's.
		expect(plans.some((p) => p.statement.engine === "d1" && /FROM shard_directory/.test(p.statement.sql))).toBe(true);
		for (const p of onShards.filter((p) => p.statement.file === "src/db/shard-status.ts"))
			expect(p.details.join("\n")).toMatch(/shard_identity|d1_migrations/);
		// A sharded app's projection (phase 2b-1): its rewards, counters and board on the shards, never their DB twins.
		const projected = onShards.filter((p) => p.statement.file !== "src/db/shard-status.ts").flatMap((p) => p.details);
		for (const table of ["rewards", "leaderboard_counts", "stats_slots"])
			expect(
				projected.some((d) => d.includes(` ${table} `)),
				table,
			).toBe(true);
		// A statement that names a control table, sent to a shard, is refused by the shard schema: the guard fails on it.
		const misplaced: Recorded = {
			engine: "shard",
			file: "src/db/throwaway.ts",
			sql: "SELECT userkey FROM users WHERE appid = ? AND email = ?",
		};
		await expect(explainAll([misplaced], ALLOWED_SCANS)).rejects.toThrow(/no such table: users/);
		// And the shard's own table is not the control database's.
		const identity: Recorded = { engine: "d1", file: "src/db/throwaway.ts", sql: "SELECT shard FROM shard_identity WHERE id = 1" };
		await expect(explainAll([identity], ALLOWED_SCANS)).rejects.toThrow(/no such table: shard_identity/);
	});

	it("fails a call site the tour does not reach (a throw-away source file)", () => {
		const source = `export const f = (db) => db\n\t.prepare(\`SELECT * FROM users WHERE \${column} = ?\`)\n\t.bind(1);`;
		const [site] = scan({ "../../src/db/throwaway.ts": source }, "prepare", "d1");
		expect(site).toMatchObject({ where: "src/db/throwaway.ts:2", fragments: ["SELECT * FROM users WHERE", "= ?"] });
		expect(site && reached(site, statements)).toBe(false);
		const sent: Recorded = { engine: "d1", file: "src/db/throwaway.ts", sql: "SELECT * FROM users WHERE email = ?" };
		expect(site && reached(site, [sent])).toBe(true);
	});
});
