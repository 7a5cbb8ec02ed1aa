import { beforeAll, describe, expect, it } from "vitest";
import { ALLOWED_SCANS } from "./allowed-scans";
import { callSites, reached, scan } from "./call-sites";
import { BOUNDED_TABLES, explainAll, GROWING_TABLES, ledgerIndexes, type Plan, schemaTables } from "./plans";
import { type Recorded, recordedStatements, startRecording } from "./recorder";
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
	`${p.statement.file}: ${p.scans.map((s) => s.detail).join("; ")}\n    ${squash(p.statement.sql).slice(0, 300)}`;

describe("query plans", { timeout: 120_000 }, () => {
	let statements: Recorded[] = [];
	let plans: Plan[] = [];

	beforeAll(async () => {
		await startRecording();
		await tour();
		statements = recordedStatements();
		plans = await explainAll(statements, ALLOWED_SCANS);
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
		for (const engine of ["d1", "ledger"] as const) {
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

	it("reads a leaderboard rank from the levels above and the ties ahead, never a user per row ahead (issue 34)", () => {
		const standings = plans.filter((p) => p.statement.file === "src/db/leaderboard.ts" && /\bAS rank\b/.test(p.statement.sql));
		expect(standings.length).toBeGreaterThan(0);
		for (const p of standings) {
			const where = p.details.join("\n");
			// The user asked for, and its own counter row: one seek each.
			expect(where).toMatch(/SEARCH u USING INDEX/);
			// The referrers with more friends: a range of the levels' primary key (one row per distinct count).
			expect(where).toContain("SEARCH l USING PRIMARY KEY (appid=? AND campaignid=? AND bucket=? AND friends>?)");
			// Its ties that reached the count first: a range of the covering index, nothing else of leaderboard_counts.
			const ahead = [...new Set(p.details.filter((d) => /^SEARCH c /.test(d)))];
			expect(ahead, where).toEqual([
				"SEARCH c USING COVERING INDEX leaderboard_counts_rank (appid=? AND campaignid=? AND bucket=? AND friends=? AND reached_at<?)",
			]);
			// No table read per row ahead: users is read once, for the user asked for.
			expect(p.details.filter((d) => /\busers\b|SEARCH o\b/.test(d)).length, where).toBeLessThanOrEqual(1);
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
		];
		const flagged = await explainAll(unindexed, ALLOWED_SCANS);
		expect(flagged.map((p) => p.scans.map((s) => s.table))).toEqual([["users"], ["conversion_events"], ["rewards"]]);
		// Indexed twins pass.
		const indexed: Recorded[] = [
			{ engine: "d1", file: "src/db/throwaway.ts", sql: "SELECT userkey FROM users WHERE appid = ? AND email = ?" },
			{ engine: "ledger", file: "src/ledger/throwaway.ts", sql: "SELECT * FROM rewards WHERE friend_userkey = ? ORDER BY seq" },
		];
		expect((await explainAll(indexed, ALLOWED_SCANS)).flatMap((p) => p.scans)).toEqual([]);
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
