import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { gateStub } from "../../src/ledger/event-gate";
import { migrateLedger } from "../../src/ledger/migrate";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { ledgerFor } from "../../src/ledger/stub";
import { type Engine, type Recorded, unrecorded } from "./recorder";
import { seedGate, seedLedger } from "./seeded-ledger";
import { pretendLarge, type Query } from "./statistics";

/**
 * EXPLAIN QUERY PLAN for recorded statements, and what counts as a scan of a
 * table that grows with use.
 */

/**
 * Tables that grow with use: with tenants (apps, campaigns and what hangs
 * off them), with users, events, rewards, clicks, deliveries, keys. A full
 * scan of any of them on a request path makes its cost grow with the database.
 */
export const GROWING_TABLES: Record<Engine, readonly string[]> = {
	d1: [
		"apps",
		"campaigns",
		"reward_rules",
		"social_actions",
		"coupons",
		"users",
		"link_clicks",
		"referral_code_aliases",
		"conversion_events",
		"rewards",
		"outbox_events",
		"delivery_attempts",
		"ledger_decisions",
		"idempotency_keys",
		"friend_reminders",
		"webhook_breakers",
		"user_identifiers",
		"link_click_log",
		"privacy_log",
		"stats_daily",
		"stats_slots",
		"stats_referrer_daily",
		"admin_sessions",
		"link_click_seen",
		"admin_tokens",
		"people",
		"members",
		"member_invitations",
		"password_resets",
		// Issue 32's passkeys (a few per person) and the challenges used in the last 5 minutes (one per passkey ceremony).
		"passkeys",
		"passkey_challenges_used",
		"dev_mail",
		"audit_log",
		"app_stripe",
		"stripe_links",
		"stripe_event_counts",
		"stripe_inbox",
		"stripe_promotion_codes",
		"stripe_customer_claims",
		"stripe_cases",
		"stripe_disputes",
		"leaderboard_counts",
		"leaderboard_levels",
		"leaderboard_ties",
		"campaign_messages",
	],
	// The shards' own tables (migrations-shard/, issue 50): none grows yet; phase 2b's moved tables (users, claims,
	// the admin views' rows) are named here as they arrive, and their statements are explained against the shard schema.
	shard: [
		// Issue 50 phase 2b-1 (migrations-shard/0002): a sharded app's projection rows, in the shard of their owner.
		"rewards",
		"stats_slots",
		"leaderboard_counts",
		"leaderboard_levels",
		"leaderboard_ties",
		// One row per erased user of a sharded app (db/privacy.ts).
		"erased_owners",
	],
	ledger: [
		"rewards",
		"balances",
		"outbox",
		"ledger_transactions",
		"reward_locks",
		"idempotency_keys",
		"refunds",
		"clawbacks",
		"milestone_events",
		"payouts",
		"dispute_holds",
		// A referrer's friends (issue 49 piece 4, ledger/friends.ts): one row per friend.
		"friends",
	],
	// The event gates (src/ledger/event-gate.ts): every event ever claimed, and those whose grants are not yet confirmed.
	gate: ["events", "pending"],
};

/** Tables that stay small whatever happens: bookkeeping of SQLite, D1 and the ledger's schema version. */
export const BOUNDED_TABLES: Record<Engine, readonly string[]> = {
	// leaderboard_tie_widths: the six slice widths of leaderboard_ties (migration 0033), fixed.
	// shard_directory: one row, the shard count and hash (issue 50, scripts/migrate.mjs).
	// leaderboard_recounts: the apps migration 0047 queued, never added to afterwards, each deleted once recounted.
	// sqlite_stat1: SQLite's statistics, a row per table and index, written by ANALYZE or PRAGMA optimize (and by the guard, statistics.ts).
	d1: [
		"d1_migrations",
		"sqlite_sequence",
		"sqlite_stat1",
		"_cf_METADATA",
		"_cf_KV",
		"leaderboard_tie_widths",
		"shard_directory",
		"leaderboard_recounts",
	],
	// shard_identity: one row, which shard of how many (scripts/migrate.mjs).
	// leaderboard_tie_widths: the same six widths as the control database's (migrations-shard/0002).
	shard: ["d1_migrations", "sqlite_sequence", "sqlite_stat1", "_cf_METADATA", "_cf_KV", "shard_identity", "leaderboard_tie_widths"],
	// profile: one row, the user's own (ledger/profile.ts, issue 49).
	ledger: ["meta", "sqlite_sequence", "sqlite_stat1", "_cf_METADATA", "_cf_KV", "profile"],
	gate: ["sqlite_stat1", "_cf_METADATA", "_cf_KV"],
};

/**
 * Scans allowed on purpose, each with the bound that keeps it small. An entry
 * matches a statement of `file` containing `sql`, scanning `table`.
 */
export interface AllowedScan {
	file: string;
	sql: string;
	table: string;
	bound: string;
}

/**
 * The number of parameters SQLite sees in `sql`: `?NNN` is parameter NNN, a
 * bare `?` is one more than the largest so far. Quoted text is skipped.
 */
export function parameterCount(sql: string): number {
	let largest = 0;
	for (let i = 0; i < sql.length; i++) {
		const c = sql[i];
		if (c === "'" || c === '"') {
			const end = sql.indexOf(c, i + 1);
			i = end < 0 ? sql.length : end;
		} else if (c === "?") {
			const digits = /^\d+/.exec(sql.slice(i + 1))?.[0];
			largest = digits ? Math.max(largest, Number(digits)) : largest + 1;
			if (digits) i += digits.length;
		}
	}
	return largest;
}

const NOT_ALIASES = new Set(
	"where join left right inner cross outer natural on using order group limit set values select union having window as and or not"
		.split(" ")
		.map((w) => w.toLowerCase()),
);

/** The tables each name in a plan may stand for: every table, and every alias the statement gives one. */
export function aliasMap(sql: string): Map<string, Set<string>> {
	const map = new Map<string, Set<string>>();
	const add = (name: string, table: string) => {
		const key = name.toLowerCase();
		map.set(key, (map.get(key) ?? new Set()).add(table.toLowerCase()));
	};
	// `FROM t a`, `JOIN t AS a`, `, t a` (a comma join), `UPDATE t`, `INTO t`.
	// The alias is read ahead, not consumed: in `JOIN rules JOIN rewards n` the second JOIN must still start a match
	// (consumed as the first one's alias, it hid `rewards n`, and a scan of `n` went unflagged).
	const re = /(?:\bFROM|\bJOIN|\bUPDATE|\bINTO|,)\s+([A-Za-z_]\w*)(?=\s+(?:AS\s+)?([A-Za-z_]\w*)|)/gi;
	for (const m of sql.matchAll(re)) {
		const [, table, alias] = m;
		if (!table) continue;
		add(table, table);
		if (alias && !NOT_ALIASES.has(alias.toLowerCase())) add(alias, table);
	}
	return map;
}

/**
 * The conditions a statement is explained in: `empty`, the migrated schema
 * without statistics and NULL for every parameter (what the guard did first);
 * `recorded`, the same schema with the parameters the tour sent (a `= NULL`
 * or a `LIMIT NULL` may plan differently from a value); `large`, the recorded
 * parameters against statistics describing every growing table grown large
 * (statistics.ts), as the planner sees a database once `ANALYZE` or `PRAGMA
 * optimize` has run on it; `seeded`, the objects' statements only (a
 * ledger's and a gate's), with the recorded parameters in a ledger holding a
 * referrer's friends and rewards and a gate holding events, written by their
 * own code and analyzed (seeded-ledger.ts).
 */
export type Condition = "empty" | "recorded" | "large" | "seeded";

export interface Plan {
	statement: Recorded;
	condition: Condition;
	/** The plan's lines, as EXPLAIN QUERY PLAN words them. */
	details: string[];
	/** Growing tables the plan reads whole, not allowed: a SCAN (with or without an index), an automatic index or a Bloom filter built on one. */
	scans: { table: string; detail: string }[];
	/** Allowed scans it makes, with their bound. */
	allowed: AllowedScan[];
}

const DDL = /^\s*(CREATE|ALTER|DROP)\b/i;

/**
 * The plan lines that read every row of a table: `SCAN t`; `SEARCH t USING
 * AUTOMATIC ... INDEX`, an index SQLite builds for the statement from every
 * row of t; `BLOOM FILTER ON t`, built from every row of t.
 */
const WHOLE_TABLE = /^(?:SCAN (\w+)|SEARCH (\w+) USING AUTOMATIC\b|BLOOM FILTER ON (\w+))/;

/** A plan's lines that read a table of `engine` which grows whole, as [table, detail]. */
export function growingScans(engine: Engine, sql: string, details: string[]): { table: string; detail: string }[] {
	const aliases = aliasMap(sql);
	const growing = new Set(GROWING_TABLES[engine]);
	const out: { table: string; detail: string }[] = [];
	for (const detail of details) {
		const m = WHOLE_TABLE.exec(detail);
		const name = m?.[1] ?? m?.[2] ?? m?.[3];
		if (!name) continue;
		const tables = aliases.get(name.toLowerCase()) ?? new Set([name.toLowerCase()]);
		for (const table of tables) if (growing.has(table)) out.push({ table, detail });
	}
	return out;
}

function classify(statement: Recorded, condition: Condition, details: string[], allowList: readonly AllowedScan[]): Plan {
	const plan: Plan = { statement, condition, details, scans: [], allowed: [] };
	for (const scan of growingScans(statement.engine, statement.sql, details)) {
		const text = statement.sql.replace(/\s+/g, " ");
		const allowed = allowList.find((a) => a.file === statement.file && a.table === scan.table && text.includes(a.sql));
		if (allowed) plan.allowed.push(allowed);
		else plan.scans.push(scan);
	}
	return plan;
}

/** A parameter as both D1 and SqlStorage take it (a boolean is sent to D1 as 1 or 0). */
function bindable(value: unknown): SqlStorageValue | undefined {
	if (value === null || typeof value === "string" || typeof value === "number" || value instanceof ArrayBuffer) return value;
	if (typeof value === "boolean") return value ? 1 : 0;
	return undefined;
}

/** The parameter sets a statement is explained with in `condition`: NULLs, or each recorded set (NULLs when none fits). */
function parameterSets(s: Recorded, condition: Condition): SqlStorageValue[][] {
	const count = parameterCount(s.sql);
	const nulls = Array<null>(count).fill(null);
	if (condition === "empty") return [nulls];
	const recorded = (s.params ?? [])
		.filter((p) => p.length === count)
		.map((p) => p.map(bindable))
		.filter((p): p is SqlStorageValue[] => p.every((v) => v !== undefined));
	return recorded.length > 0 ? recorded : [nulls];
}

/** The plan of one statement on one database, as its lines (D1's async call and SqlStorage's sync one alike). */
type Explain = (sql: string, params: SqlStorageValue[]) => Promise<string[]> | string[];

async function explainOn(statements: Recorded[], condition: Condition, explain: Explain, allowList: readonly AllowedScan[]) {
	const plans: Plan[] = [];
	for (const s of statements)
		for (const params of parameterSets(s, condition))
			plans.push(classify(s, condition, await explain(`EXPLAIN QUERY PLAN ${s.sql}`, params), allowList));
	return plans;
}

const d1Query =
	(db: D1Database): Query =>
	async (sql, ...args) =>
		(
			await db
				.prepare(sql)
				.bind(...args)
				.all<Record<string, unknown>>()
		).results;
const d1Explain =
	(db: D1Database): Explain =>
	async (sql, params) =>
		(await d1Query(db)(sql, ...params)).map((r) => String(r.detail));
const objectQuery =
	(sql: SqlStorage): Query =>
	async (text, ...args) =>
		sql.exec<Record<string, SqlStorageValue>>(text, ...args).toArray();
const objectExplain =
	(sql: SqlStorage): Explain =>
	(text, params) =>
		sql
			.exec<{ detail: string }>(text, ...params)
			.toArray()
			.map((r) => r.detail);

/** Runs `explain` on `query`'s database, under statistics of a large database when `condition` asks for them (put back after). */
async function withCondition<T>(query: Query, engine: Engine, condition: Condition, explain: () => Promise<T>): Promise<T> {
	if (condition !== "large") return explain();
	const restore = await pretendLarge(query, GROWING_TABLES[engine]);
	try {
		return await explain();
	} finally {
		await restore();
	}
}

/**
 * EXPLAIN QUERY PLAN of each statement in `condition` (see Condition): D1's
 * and a shard's on the binding (its statistics put back after), a gate's and
 * a ledger's on objects of their own at the newest schema. DDL has no plan.
 */
export async function explainAll(
	statements: Recorded[],
	allowList: readonly AllowedScan[],
	condition: Condition = "empty",
): Promise<Plan[]> {
	// The seeded condition is the objects': D1's tables are not seeded (their statistics are the large condition's).
	const queries = statements.filter((s) => !DDL.test(s.sql) && (condition !== "seeded" || s.engine === "ledger" || s.engine === "gate"));
	const plans: Plan[] = [];
	// Every shard has the same schema (migrations-shard/): a statement sent to any is explained on SHARD_0.
	for (const [engine, db] of [
		["d1", env.DB],
		["shard", env.SHARD_0],
	] as const) {
		const own = queries.filter((q) => q.engine === engine);
		if (own.length > 0)
			plans.push(...(await withCondition(d1Query(db), engine, condition, () => explainOn(own, condition, d1Explain(db), allowList))));
	}
	// A gate object's (its constructor makes its tables); statistics go on a gate of its own, never one the service uses.
	const gateQueries = queries.filter((q) => q.engine === "gate");
	const gate = condition === "empty" || condition === "recorded" ? gateStub(env, 0) : env.EVENT_GATE.getByName(`plan-explain-${condition}`);
	if (gateQueries.length > 0)
		await runInDurableObject(gate, async (instance, state) => {
			const sql = state.storage.sql;
			if (condition === "seeded") await unrecorded(() => seedGate(instance, sql));
			plans.push(
				...(await withCondition(objectQuery(sql), "gate", condition, () =>
					explainOn(gateQueries, condition, objectExplain(sql), allowList),
				)),
			);
		});
	const ledgerQueries = queries.filter((q) => q.engine === "ledger");
	// A ledger of its own, at the newest schema (migrated here: a ledger no one wrote to has no tables).
	const scratch = condition === "large" || condition === "seeded" ? condition : "scratch";
	if (ledgerQueries.length > 0)
		await runInDurableObject(ledgerFor(env, "plan-explain", scratch), async (_instance, state) => {
			migrateLedger(state.storage, LEDGER_MIGRATIONS);
			// Written by the ledger's own code: kept out of the recording, whose samples are the tour's.
			if (condition === "seeded") await unrecorded(() => seedLedger(state.storage, "plan-explain", scratch));
			const sql = state.storage.sql;
			plans.push(
				...(await withCondition(objectQuery(sql), "ledger", condition, () =>
					explainOn(ledgerQueries, condition, objectExplain(sql), allowList),
				)),
			);
		});
	return plans;
}

/** The indexes a new ledger creates (its own, not the ones SQLite makes for UNIQUE and PRIMARY KEY). */
export async function ledgerIndexes(): Promise<string[]> {
	let names: string[] = [];
	await runInDurableObject(ledgerFor(env, "plan-explain", "scratch"), async (_instance, state) => {
		migrateLedger(state.storage, LEDGER_MIGRATIONS);
		names = state.storage.sql
			.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
			.toArray()
			.map((r) => r.name);
	});
	return names;
}

/** The tables of each engine's schema (D1 and a shard as migrated, tests' scratch tables `test_*` aside; a new ledger's). */
export async function schemaTables(): Promise<Record<Engine, string[]>> {
	const d1 = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all<{ name: string }>();
	const shard = await env.SHARD_0.prepare(
		"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'test\\_%' ESCAPE '\\'",
	).all<{
		name: string;
	}>();
	let ledger: string[] = [];
	await runInDurableObject(ledgerFor(env, "plan-explain", "scratch"), async (_instance, state) => {
		migrateLedger(state.storage, LEDGER_MIGRATIONS);
		ledger = state.storage.sql
			.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
			.toArray()
			.map((r) => r.name);
	});
	let gate: string[] = [];
	await runInDurableObject(gateStub(env, 0), async (_instance, state) => {
		gate = state.storage.sql
			.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
			.toArray()
			.map((r) => r.name);
	});
	return { d1: d1.results.map((r) => r.name), shard: shard.results.map((r) => r.name), ledger, gate };
}
