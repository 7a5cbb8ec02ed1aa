import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrateLedger, runStep } from "../../src/ledger/migrate";
import { queueProjection } from "../../src/ledger/outbox";
import { NEXT_OUTBOX_ID } from "../../src/ledger/outbox-entries";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { LEDGER_SCHEMA } from "../../src/ledger/schema-latest";
import { WITHOUT_ROWID_STEP_12 } from "../../src/ledger/schema-step-12";
import { freshLedger, grantOf } from "./support";

/** Issue 19: a new ledger gets its schema in one DDL execution; existing ledgers still migrate step by step. */

/** Everything about a schema that code can observe: tables' columns in order, indexes (columns, uniqueness, partial WHERE). */
function shape(sql: SqlStorage) {
	const objects = sql
		.exec<{ type: string; name: string; tbl_name: string; sql: string | null }>(
			"SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE '_cf_%' ORDER BY type, name",
		)
		.toArray();
	return objects.map((o) => ({
		type: o.type,
		name: o.name,
		table: o.tbl_name,
		columns:
			o.type === "table"
				? sql.exec(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info('${o.name}')`).toArray()
				: sql.exec(`SELECT seqno, name, desc, coll, key FROM pragma_index_xinfo('${o.name}')`).toArray(),
		// An index's WHERE clause, as written (whitespace aside).
		where: o.type === "index" ? (/ WHERE (.*)$/is.exec(o.sql ?? "")?.[1]?.replace(/\s+/g, " ") ?? null) : null,
		unique: o.type === "index" ? /^CREATE UNIQUE/i.test(o.sql ?? "") || o.sql === null : null,
	}));
}

/** The version before step 12 (its index in the list), so the tests hold if the step is renumbered at a merge. */
const BEFORE_12 = LEDGER_MIGRATIONS.indexOf(WITHOUT_ROWID_STEP_12);

/** Whether meta and balances are WITHOUT ROWID tables (as their CREATE statements say). */
function withoutRowid(sql: SqlStorage) {
	const is = (name: string) =>
		/WITHOUT ROWID\s*$/i.test(sql.exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", name).one().sql);
	return { meta: is("meta"), balances: is("balances") };
}

/** Empties the object's database, as if it were new. */
function dropAll(sql: SqlStorage) {
	const objects = sql
		.exec<{ type: string; name: string }>(
			"SELECT type, name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name <> 'sqlite_sequence'",
		)
		.toArray();
	for (const o of objects) sql.exec(`DROP TABLE ${o.name}`);
}

/** Counts the statements run on this object's SQLite while `fn` runs. */
function counting<T>(sql: SqlStorage, fn: () => T): { result: T; statements: string[] } {
	const proto = Object.getPrototypeOf(sql) as { exec: (...args: unknown[]) => unknown };
	const original = proto.exec;
	const statements: string[] = [];
	proto.exec = function (this: unknown, ...args: unknown[]) {
		statements.push(String(args[0]));
		return original.apply(this, args);
	};
	try {
		return { result: fn(), statements };
	} finally {
		proto.exec = original;
	}
}

describe("ledger schema", () => {
	it("is at the same version as the migration steps", () => {
		expect(LEDGER_SCHEMA.version).toBe(LEDGER_MIGRATIONS.length);
	});

	it("creates a new ledger with one DDL execution, the same schema as every step applied in turn", async () => {
		const { stub } = freshLedger();
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			const stepwise = counting(sql, () => migrateLedger(state.storage, LEDGER_MIGRATIONS, { version: -1, script: "" }));
			expect(stepwise.result).toBe(LEDGER_MIGRATIONS.length);
			const stepped = shape(sql);

			dropAll(sql);
			const fresh = counting(sql, () => migrateLedger(state.storage, LEDGER_MIGRATIONS));
			expect(fresh.result).toBe(LEDGER_MIGRATIONS.length);
			// One read (is the object new?) and one script; the steps took one statement per DDL line and version.
			expect(fresh.statements).toHaveLength(2);
			expect(stepwise.statements.length).toBeGreaterThan(30);
			expect(shape(sql)).toEqual(stepped);
			expect(sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one().value).toBe(String(LEDGER_MIGRATIONS.length));
		});
	});

	it("migrates an existing ledger step by step from each older version, keeping its rewards", async () => {
		for (let from = 0; from < LEDGER_MIGRATIONS.length; from++) {
			const { appid, userkey, stub } = freshLedger();
			await runInDurableObject(stub, (_ledger, state) => {
				const sql = state.storage.sql;
				dropAll(sql);
				// An object left at version `from` (0: from before versioning, its first tables without a version).
				if (from === 0) runStep(sql, LEDGER_MIGRATIONS[0] ?? []);
				else migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, from));
				sql.exec(
					`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid, campaignname,
					 growthhack, friend_userkey, created_at, updated_at) VALUES ('old', 1, '1', 'Signup', 'Referrer', 500, 'USD', 'InstoreCredits',
					 'Approved', 1, 'c', 'g', 'friend', '2026-01-01', '2026-01-01')`,
				);
				// An entry not yet delivered (its projection), kept whole by every step (step 9 rebuilds the outbox).
				sql.exec(
					`INSERT INTO outbox (id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at)
					 VALUES (1, 'projection', 'projection:1', '{"seq":1}', 1, 2, 1234, 'D1 down', '2026-01-01')`,
				);
				// Its running total (step 12 rebuilds balances).
				sql.exec("INSERT INTO balances (rewardunit, growthhack, campaignid, campaignname, approved) VALUES ('USD', 'g', 1, 'c', 500)");
				const waiting = sql
					.exec("SELECT id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at FROM outbox")
					.toArray();
				const { result, statements } = counting(sql, () => migrateLedger(state.storage, LEDGER_MIGRATIONS));
				expect(result).toBe(LEDGER_MIGRATIONS.length);
				// Step by step, never the new-ledger script.
				expect(statements).not.toContain(LEDGER_SCHEMA.script);
				expect(sql.exec("SELECT COUNT(*) AS n FROM rewards").one().n).toBe(1);
				expect(
					sql.exec("SELECT rewardunit, growthhack, campaignid, campaignname, pending, approved, claimed FROM balances").toArray(),
				).toEqual([{ rewardunit: "USD", growthhack: "g", campaignid: 1, campaignname: "c", pending: 0, approved: 500, claimed: 0 }]);
				expect(
					sql.exec("SELECT id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at FROM outbox").toArray(),
				).toEqual(waiting);
				expect(sql.exec("SELECT COUNT(*) AS n FROM meta WHERE key <> 'schema_version'").one().n).toBe(0);
			});
			// The migrated ledger works: the old reward is there and a new one can be granted.
			await stub.grant(appid, userkey, [grantOf()]);
			expect((await stub.listRewards()).map((r) => r.reward)).toEqual(["5", "10"]);
		}
	});

	it("step 10 carries every reward over whole, keeps seq growing, and keeps a grant key and a milestone key unique", async () => {
		const { appid, userkey, stub } = freshLedger();
		// A ledger that exists (its object knows it has tables, so its next grant looks its keys up), then set back to step 9.
		await stub.grant(appid, userkey, [grantOf()]);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			sql.exec("DELETE FROM sqlite_sequence");
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, 9));
			// 450 rewards, every column set on some, NULL on others; the last one, a
			// milestone reward, then its event's own reward.
			for (let i = 1; i <= 450; i++) {
				const milestone = i === 449;
				sql.exec(
					`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, redeemed, rewardunit, rewardtype, status, comment,
					   hold_until, rewarded_at, coupon, couponname, coupondetails, couponimage, campaignid, campaignname, growthhack,
					   friend_userkey, friend_email, friend_name, friend_profileimage, created_at, updated_at, version, fraudsignals, reversed,
					   settled, percent, coupon_seen_at, payoutid, payout_state)
					 VALUES (?, ?, ?, 'Purchase', 'Referrer', ?, ?, 'USD', ?, 'Approved', ?, ?, ?, ?, ?, ?, ?, 1, 'c "quoted"', 'g', ?, ?, ?, ?,
					   '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z', ?, ?, ?, ?, ?, ?, ?, ?)`,
					milestone ? "milestone:7" : `e${i}:3`,
					milestone ? 7 : 3,
					milestone ? "e448" : `e${i}`,
					i * 100 + 1,
					i % 3,
					i % 5 === 0 ? "Stripe" : "InstoreCredits",
					i % 2 === 0 ? `comment ${i} \u00e9` : null,
					i % 7 === 0 ? "2026-02-01T00:00:00.000Z" : null,
					i % 2 === 0 ? "2026-01-03T00:00:00.000Z" : null,
					i % 4 === 0 ? `CODE${i}` : null,
					i % 4 === 0 ? "name" : null,
					i % 4 === 0 ? "details" : null,
					i % 4 === 0 ? "https://img.example/x.png" : null,
					`friend${i % 10}`,
					i % 3 === 0 ? null : `f${i}@x.com`,
					i % 3 === 0 ? null : `F ${i}`,
					null,
					1 + (i % 4),
					i % 6 === 0 ? '["same_ip"]' : "[]",
					i % 9,
					i % 8,
					i % 2 === 0 ? 1 : null,
					i % 4 === 0 ? "2026-01-04T00:00:00.000Z" : null,
					i % 5 === 0 ? `po_${i}` : null,
					i % 5 === 0 ? "paid" : null,
				);
			}
			const before = sql.exec("SELECT * FROM rewards ORDER BY seq").toArray();
			expect(before).toHaveLength(450);
			migrateLedger(state.storage, LEDGER_MIGRATIONS);
			expect(sql.exec("SELECT * FROM rewards ORDER BY seq").toArray()).toEqual(before);
			expect(sql.exec("SELECT COUNT(*) AS n FROM meta WHERE key <> 'schema_version'").one().n).toBe(0);
			expect(sql.exec("SELECT COUNT(*) AS n FROM sqlite_sequence WHERE name = 'rewards'").one().n).toBe(0);
			// The keys stay unique: a grant's within its event, a milestone's across events (each try in a transaction of its own).
			const copy = (seq: number, customid: string) =>
				state.storage.transactionSync(() =>
					sql.exec(
						`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid,
						   campaignname, growthhack, friend_userkey, created_at, updated_at)
						 SELECT key, ruleid, ${customid}, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid, campaignname,
						   growthhack, friend_userkey, created_at, updated_at FROM rewards WHERE seq = ?`,
						seq,
					),
				);
			// A grant's key within its event (ledger schema step 17: in the index of its rule, friend and event).
			expect(() => copy(12, "customid")).toThrow(
				/UNIQUE constraint failed: rewards.ruleid, rewards.friend_userkey, rewards.customid, rewards.key/,
			);
			expect(() => copy(449, "'another event'")).toThrow(/UNIQUE constraint failed: rewards.key/);
		});
		// The next reward takes the next seq; a grant already given (its event and key) is not given again. The grant names
		// its rule and its friend (the event's user), as every grant of the event does.
		const e12 = { userkey: "friend2", email: null, name: null, profileimage: null };
		const granted = await stub.grant(appid, userkey, [
			grantOf({ key: "e12:3", customid: "e12", ruleid: 3, friend: e12 }),
			grantOf({ key: "new:3", customid: "new" }),
		]);
		expect(granted.rewards.map((r) => [r.rewarddtlid, r.created])).toEqual([
			[`${userkey}-12`, false],
			[`${userkey}-451`, true],
		]);
	});

	it("step 11 carries every waiting outbox entry over whole, and an entry then writes one row", async () => {
		const { stub } = freshLedger();
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, 10));
			// 450 entries, ids with gaps as deliveries leave them.
			for (let i = 1; i <= 450; i++) {
				sql.exec(
					`INSERT INTO outbox (id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at)
					 VALUES (?, ?, ?, ?, ?, ?, ?, ?, '2026-01-01T00:00:00.000Z')`,
					i * 3,
					i % 2 === 0 ? "projection" : "webhook",
					`ref:${i}`,
					JSON.stringify({ seq: i, text: '"quoted" \u00e9' }),
					i % 4,
					i % 3,
					1_000 + i,
					i % 5 === 0 ? "D1 down" : null,
				);
			}
			const columns = "id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at";
			const before = sql.exec(`SELECT ${columns} FROM outbox ORDER BY id`).toArray();
			migrateLedger(state.storage, LEDGER_MIGRATIONS);
			expect(sql.exec(`SELECT ${columns} FROM outbox ORDER BY id`).toArray()).toEqual(before);
			expect(sql.exec("SELECT COUNT(*) AS n FROM meta WHERE key <> 'schema_version'").one().n).toBe(0);
			// The next entry takes the next id, in one row.
			queueProjection(sql, 451, 1, Date.now());
			expect(sql.exec("SELECT id FROM outbox WHERE ref = 'projection:451'").one().id).toBe(1351);
			expect(
				sql.exec(
					`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'webhook', 'one', '{}', 0, '')`,
				).rowsWritten,
			).toBe(1);
		});
	});

	it("knows where step 12 is", () => {
		expect(BEFORE_12).toBeGreaterThanOrEqual(11);
	});

	it("step 12 carries meta, every balance and every reward over whole, WITHOUT ROWID; a new balance row writes one row, a Friend reward no rewards_friend entry", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf()]);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, BEFORE_12));
			expect(withoutRowid(sql)).toEqual({ meta: false, balances: false });
			sql.exec("INSERT INTO meta (key, value) VALUES ('erased_at', '2026-01-05T00:00:00.000Z')");
			// 450 balance rows (units, growth hacks, campaigns; quotes and accents in the names), and 450 rewards.
			for (let i = 1; i <= 450; i++) {
				sql.exec(
					`INSERT INTO balances (rewardunit, growthhack, campaignid, campaignname, pending, approved, claimed, owed)
					 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
					["USD", "EUR", "points"][i % 3],
					`g${i % 7}`,
					i,
					`campaign "${i}" \u00e9`,
					i * 100,
					i * 7,
					i % 11,
					i % 5 === 0 ? i : 0,
				);
				sql.exec(
					`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid, campaignname,
					   growthhack, friend_userkey, created_at, updated_at) VALUES (?, 3, ?, 'Purchase', 'Referrer', ?, 'USD', 'InstoreCredits',
					   'Approved', ?, 'c', 'g', ?, '2026-01-01', '2026-01-01')`,
					`e${i}:3`,
					`e${i}`,
					i * 100,
					i,
					`friend${i % 10}`,
				);
			}
			const read = () => ({
				meta: sql.exec("SELECT key, value FROM meta ORDER BY key").toArray(),
				balances: sql.exec("SELECT * FROM balances ORDER BY rewardunit, growthhack, campaignid").toArray(),
				rewards: sql.exec("SELECT * FROM rewards ORDER BY seq").toArray(),
			});
			const before = read();
			expect(before.balances).toHaveLength(450);
			expect(before.rewards).toHaveLength(450);
			migrateLedger(state.storage, LEDGER_MIGRATIONS);
			const after = read();
			expect(after.balances).toEqual(before.balances);
			expect(after.rewards).toEqual(before.rewards);
			// The same meta rows, but for the version reached.
			expect(after.meta).toEqual(
				before.meta.map((r) => (r.key === "schema_version" ? { ...r, value: String(LEDGER_MIGRATIONS.length) } : r)),
			);
			expect(withoutRowid(sql)).toEqual({ meta: true, balances: true });
			// A new balance row and a new meta row now write one row each; an update of a balance, one.
			expect(
				sql.exec(
					"INSERT INTO balances (rewardunit, growthhack, campaignid, campaignname, pending, approved, claimed) VALUES ('USD', 'new', 1, 'c', 1, 0, 0)",
				).rowsWritten,
			).toBe(1);
			expect(
				sql.exec("UPDATE balances SET pending = pending + 1 WHERE rewardunit = 'USD' AND growthhack = 'new' AND campaignid = 1")
					.rowsWritten,
			).toBe(1);
			expect(sql.exec("INSERT INTO meta (key, value) VALUES ('one', 'row')").rowsWritten).toBe(1);
			// A reward writes its row and rewards_rule_friend_event (Pending: not in rewards_wallet). Both were 4 before step 12;
			// a Referrer reward wrote rewards_friend too until step 16, and each its event key apart until step 17
			// (schema-step-16.integration.test.ts, schema-step-17.integration.test.ts).
			const reward = (usertype: string) =>
				sql.exec(
					`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid, campaignname,
					   growthhack, friend_userkey, created_at, updated_at) VALUES (?, 3, ?, 'Purchase', ?, 1, 'USD', 'InstoreCredits',
					   'Pending', 1, 'c', 'g', 'friend1', '2026-01-01', '2026-01-01')`,
					`${usertype}:3`,
					usertype,
					usertype,
				).rowsWritten;
			expect([reward("Friend"), reward("Referrer")]).toEqual([2, 2]);
			sql.exec("DELETE FROM rewards WHERE seq > 450");
			sql.exec("DELETE FROM balances WHERE growthhack = 'new'");
			sql.exec("DELETE FROM meta WHERE key = 'one'");
			// The erasure survived: no reward is granted to an erased user (checked below through the RPC).
		});
		const granted = await stub.grant(appid, userkey, [grantOf({ key: "after:3", customid: "after" })]);
		expect(granted.skipped).toEqual([{ key: "after:3", reason: "user_erased" }]);
	});

	it("a failure inside step 12 leaves version 11 with its tables, rows and rowid tables as they were", async () => {
		const { stub } = freshLedger();
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, BEFORE_12));
			for (let i = 1; i <= 50; i++)
				sql.exec(
					"INSERT INTO balances (rewardunit, growthhack, campaignid, campaignname, pending, approved, claimed) VALUES ('USD', 'g', ?, 'c', ?, 0, 0)",
					i,
					i,
				);
			const balances = sql.exec("SELECT * FROM balances ORDER BY campaignid").toArray();
			const step12 = LEDGER_MIGRATIONS[BEFORE_12] ?? [];
			// The failure after every statement of the step has run (meta rebuilt included), before the version is written.
			const failing = [
				...LEDGER_MIGRATIONS.slice(0, BEFORE_12),
				[
					...step12,
					() => {
						throw new Error("injected");
					},
				],
			];
			expect(() => migrateLedger(state.storage, failing)).toThrow("injected");
			expect(sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one().value).toBe(String(BEFORE_12));
			expect(sql.exec("SELECT * FROM balances ORDER BY campaignid").toArray()).toEqual(balances);
			expect(sql.exec("SELECT COUNT(*) AS n FROM meta").one().n).toBe(1);
			expect(withoutRowid(sql)).toEqual({ meta: false, balances: false });
			// And the real step then runs from there.
			expect(migrateLedger(state.storage, LEDGER_MIGRATIONS)).toBe(LEDGER_MIGRATIONS.length);
			expect(sql.exec("SELECT * FROM balances ORDER BY campaignid").toArray()).toEqual(balances);
			expect(withoutRowid(sql)).toEqual({ meta: true, balances: true });
		});
	});
});
