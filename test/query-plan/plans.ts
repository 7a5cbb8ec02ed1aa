import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { gateStub } from "../../src/ledger/event-gate";
import { migrateLedger } from "../../src/ledger/migrate";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { ledgerFor } from "../../src/ledger/stub";
import type { Engine, Recorded } from "./recorder";

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
	d1: ["d1_migrations", "sqlite_sequence", "_cf_METADATA", "_cf_KV", "leaderboard_tie_widths", "shard_directory", "leaderboard_recounts"],
	// shard_identity: one row, which shard of how many (scripts/migrate.mjs).
	// leaderboard_tie_widths: the same six widths as the control database's (migrations-shard/0002).
	shard: ["d1_migrations", "sqlite_sequence", "_cf_METADATA", "_cf_KV", "shard_identity", "leaderboard_tie_widths"],
	// profile: one row, the user's own (ledger/profile.ts, issue 49).
	ledger: ["meta", "sqlite_sequence", "_cf_METADATA", "_cf_KV", "profile"],
	gate: ["_cf_METADATA", "_cf_KV"],
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
	const re = /(?:\bFROM|\bJOIN|\bUPDATE|\bINTO|,)\s+([A-Za-z_]\w*)(?:\s+(?:AS\s+)?([A-Za-z_]\w*))?/gi;
	for (const m of sql.matchAll(re)) {
		const [, table, alias] = m;
		if (!table) continue;
		add(table, table);
		if (alias && !NOT_ALIASES.has(alias.toLowerCase())) add(alias, table);
	}
	return map;
}

export interface Plan {
	statement: Recorded;
	/** The plan's lines, as EXPLAIN QUERY PLAN words them. */
	details: string[];
	/** Growing tables the plan scans whole (SCAN, with or without an index), not allowed. */
	scans: { table: string; detail: string }[];
	/** Allowed scans it makes, with their bound. */
	allowed: AllowedScan[];
}

const DDL = /^\s*(CREATE|ALTER|DROP)\b/i;

/** A plan's lines that scan a table of `engine` which grows, as [table, detail]. */
export function growingScans(engine: Engine, sql: string, details: string[]): { table: string; detail: string }[] {
	const aliases = aliasMap(sql);
	const growing = new Set(GROWING_TABLES[engine]);
	const out: { table: string; detail: string }[] = [];
	for (const detail of details) {
		const name = /^SCAN (\w+)/.exec(detail)?.[1];
		if (!name) continue;
		const tables = aliases.get(name.toLowerCase()) ?? new Set([name.toLowerCase()]);
		for (const table of tables) if (growing.has(table)) out.push({ table, detail });
	}
	return out;
}

function classify(statement: Recorded, details: string[], allowList: readonly AllowedScan[]): Plan {
	const plan: Plan = { statement, details, scans: [], allowed: [] };
	for (const scan of growingScans(statement.engine, statement.sql, details)) {
		const text = statement.sql.replace(/\s+/g, " ");
		const allowed = allowList.find((a) => a.file === statement.file && a.table === scan.table && text.includes(a.sql));
		if (allowed) plan.allowed.push(allowed);
		else plan.scans.push(scan);
	}
	return plan;
}

/** EXPLAIN QUERY PLAN of each statement (NULL for every parameter) against the migrated schemas; DDL has no plan. */
export async function explainAll(statements: Recorded[], allowList: readonly AllowedScan[]): Promise<Plan[]> {
	const queries = statements.filter((s) => !DDL.test(s.sql));
	const plans: Plan[] = [];
	for (const s of queries.filter((q) => q.engine === "d1" || q.engine === "shard")) {
		const nulls = Array<null>(parameterCount(s.sql)).fill(null);
		// Every shard has the same schema (migrations-shard/): a statement sent to any is explained on SHARD_0.
		const db = s.engine === "shard" ? env.SHARD_0 : env.DB;
		const { results } = await db
			.prepare(`EXPLAIN QUERY PLAN ${s.sql}`)
			.bind(...nulls)
			.all<{ detail: string }>();
		plans.push(
			classify(
				s,
				results.map((r) => r.detail),
				allowList,
			),
		);
	}
	// A gate object's (its constructor makes its tables).
	const gateQueries = queries.filter((q) => q.engine === "gate");
	await runInDurableObject(gateStub(env, 0), async (_instance, state) => {
		for (const s of gateQueries) {
			const nulls = Array<null>(parameterCount(s.sql)).fill(null);
			const rows = state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${s.sql}`, ...nulls).toArray();
			plans.push(
				classify(
					s,
					rows.map((r) => r.detail),
					allowList,
				),
			);
		}
	});
	const ledgerQueries = queries.filter((q) => q.engine === "ledger");
	// A ledger of its own, at the newest schema (migrated here: a ledger no one wrote to has no tables).
	await runInDurableObject(ledgerFor(env, "plan-explain", "scratch"), async (_instance, state) => {
		migrateLedger(state.storage, LEDGER_MIGRATIONS);
		for (const s of ledgerQueries) {
			const nulls = Array<null>(parameterCount(s.sql)).fill(null);
			const rows = state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${s.sql}`, ...nulls).toArray();
			plans.push(
				classify(
					s,
					rows.map((r) => r.detail),
					allowList,
				),
			);
		}
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
