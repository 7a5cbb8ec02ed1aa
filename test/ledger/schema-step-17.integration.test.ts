import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { appKeyAudit } from "../../src/ledger/audit";
import { grantRewards } from "../../src/ledger/grant";
import { migrateLedger } from "../../src/ledger/migrate";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { EVENT_IN_RULE_INDEX_STEP_17 } from "../../src/ledger/schema-step-17";
import type { ReverseOperation } from "../../src/ledger/transaction-types";
import type { RewardGrant } from "../../src/ledger/types";
import { dropAll, recording, rewardScans } from "../support/ledger-sql";
import { freshLedger, grantOf } from "./support";

/**
 * Ledger schema step 17 (issue 49, rows written per conversion): the event's
 * key folded into the rule index. A referrer's ledger written at step 16
 * (with a refund prepared there, its payload without the event's user)
 * upgrades, then converts, refunds and disputes as before; with its rewards
 * in place no statement of those scans the rewards table; and a reward
 * writes one row fewer.
 */

/** The version before step 17 (its index in the list), so the test holds if the step is renumbered at a merge. */
const BEFORE_17 = LEDGER_MIGRATIONS.indexOf(EVENT_IN_RULE_INDEX_STEP_17);

const FRIENDS = 15;
const EVENTS = 150;
/** Event `e<n>` is friend `friend<n mod 15>`'s: every reward of it names that friend (a Referrer reward in its referrer's ledger). */
const friendOf = (n: number) => `friend${n % FRIENDS}`;
const person = (userkey: string) => ({ userkey, email: `${userkey}@example.com`, name: userkey, profileimage: null });

/** The grants of event e<n> for rule `ruleid` in the referrer's ledger, as a decision makes them (rewards/rules.ts). */
const grant = (n: number, ruleid: number, more: Partial<RewardGrant> = {}): RewardGrant =>
	grantOf({
		key: `e${n}:${ruleid}`,
		customid: `e${n}`,
		ruleid,
		friend: person(friendOf(n)),
		amount: ruleid,
		webhooks: false,
		rewardemail: false,
		...more,
	});
/** Event e<n>'s grants: rules 3 and 5, and for e1 and e2 the milestone rule 9 (N = 2: e2's friend is the second). */
const eventGrants = (n: number) => [grant(n, 3), grant(n, 5), ...(n <= 2 ? [grant(n, 9, { milestone: 2, rewardfrequency: 0 })] : [])];

const fullRefund = (n: number, refundid: string, friendUserkey?: string): ReverseOperation => ({
	kind: "reverse",
	customid: `e${n}`,
	...(friendUserkey ? { friendUserkey } : {}),
	refundid,
	refundvalue: null,
	transactionvalue: 10_000,
	reason: null,
});

const statusOf = (rewards: { key: string; rewardstatus: string }[]) => Object.fromEntries(rewards.map((r) => [r.key, r.rewardstatus]));

describe("ledger schema step 17: the event's key in the rule index", () => {
	it("knows where step 17 is", () => {
		expect(BEFORE_17).toBeGreaterThanOrEqual(16);
	});

	it("a referrer's ledger written at step 16 upgrades, then converts, refunds and disputes as before, seeking every read", async () => {
		const { appid, userkey, stub } = freshLedger();
		// The object exists with tables (its writer knows it), then is set back to step 16 and filled as step 16's code did.
		await stub.grant(appid, userkey, [grantOf()]);
		const prepared = await runInDurableObject(stub, (ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, BEFORE_17));
			expect(sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name IN ('rewards_event_key', 'rewards_rule_friend')").one().n).toBe(
				2,
			);
			const tx = { sql, appid, userkey, nowMs: Date.parse("2026-01-01T00:00:00.000Z") };
			for (let n = 1; n <= EVENTS; n++) state.storage.transactionSync(() => grantRewards(tx, eventGrants(n)));
			// A refund of e7 prepared at step 16: its payload names no user, as step 16's Worker sent it.
			const answer = ledger.prepareTransaction("tx_before", fullRefund(7, "before"), 60_000);
			expect(answer).toMatchObject({ ok: true, state: "prepared" });
			return sql.exec<{ payload: string }>("SELECT payload FROM ledger_transactions WHERE txid = 'tx_before'").one().payload;
		});
		expect(JSON.parse(prepared)).not.toHaveProperty("friendUserkey");
		const before = await stub.listRewards();
		// 150 events x 2 rules, and the milestone (e2's friend is the rule's second).
		expect(before).toHaveLength(2 * EVENTS + 1);
		const milestone = before.find((r) => r.key === "milestone:9")!;
		const seqOf = (key: string) =>
			Number(
				before
					.find((r) => r.key === key)!
					.rewarddtlid.split("-")
					.at(-1),
			);
		// The milestone reward is a grant of e2, its N-th event: it names e2's friend.
		expect(milestone).toMatchObject({ friendUserkey: friendOf(2) });
		await runInDurableObject(stub, (_ledger, state) =>
			expect(state.storage.sql.exec("SELECT customid FROM rewards WHERE key = 'milestone:9'").one().customid).toBe("e2"),
		);

		// The upgrade: the object starts again and migrates (writer.ts).
		await evictDurableObject(stub);
		expect(await stub.listRewards()).toEqual(before);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			expect(sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one().value).toBe(String(LEDGER_MIGRATIONS.length));
			const indexes = sql
				.exec<{ name: string }>(
					"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'rewards' AND sql IS NOT NULL ORDER BY name",
				)
				.toArray()
				.map((r) => r.name);
			expect(indexes).toContain("rewards_rule_friend_event");
			expect(indexes).not.toContain("rewards_event_key");
			expect(indexes).not.toContain("rewards_rule_friend");
		});

		// A late grant of e7 (a rule the first grant missed) lands while its refund is prepared: the commit, which reads
		// the old payload by customid, reverses it with the event's other rewards.
		const late = await stub.grant(appid, userkey, [grant(7, 11)]);
		expect(late.rewards[0]).toMatchObject({ created: true, rewardstatus: "Approved" });
		const { committed, scans } = await runInDurableObject(stub, (ledger, state) => {
			const { result, statements } = recording(state.storage.sql, () => ledger.commitTransaction("tx_before"));
			return { committed: result, scans: rewardScans(state.storage.sql, statements) };
		});
		// The old payload's one read by customid alone: the scan allowed for it (test/query-plan/allowed-scans.ts).
		expect(scans).toEqual([expect.stringMatching(/^SCAN rewards.*: SELECT seq, key FROM rewards WHERE customid = \?/)]);
		expect(committed).toMatchObject({ ok: true, result: { reversal: { full: true, changed: true } } });
		if (!committed.ok) throw new Error("commit refused");
		expect(committed.result.rewards.map((r) => [r.key, r.rewardstatus])).toEqual([
			["e7:3", "Rejected"],
			["e7:5", "Rejected"],
			["e7:11", "Rejected"],
		]);

		await runInDurableObject(stub, (ledger, state) => {
			const sql = state.storage.sql;
			const { result, statements } = recording(sql, () => {
				// A replay of e10's grant finds its reward; friend3's frequency limit of rule 3 (10 rewards) holds; a new
				// event of friend3 is rewarded under a limit of 11 for rule 5.
				const replay = ledger.grant(appid, userkey, [grant(10, 3)]);
				const limited = ledger.grant(appid, userkey, [grant(EVENTS + 3, 3, { rewardfrequency: 10 })]);
				const fresh = ledger.grant(appid, userkey, [grant(EVENTS + 3, 5, { rewardfrequency: 11 })]);
				// A full refund of e2 with its user: its two rewards, and the milestone its friend no longer reaches.
				const refunded = ledger.execute(fullRefund(2, "after", friendOf(2)));
				// A refund of e12 prepared with its user locks e12's two rewards, then commits.
				const locking = ledger.prepareTransaction("tx_after", fullRefund(12, "after", friendOf(12)), 60_000);
				const locks = sql.exec("SELECT seq FROM reward_locks WHERE txid = 'tx_after' ORDER BY seq").toArray();
				const commit = ledger.commitTransaction("tx_after");
				// A dispute of e20 holds its two rewards, and its win restores them.
				const audit = { ...appKeyAudit("key"), entryid: "dp_17_hold" };
				const held = ledger.disputePhase(appid, userkey, {
					customid: "e20",
					friendUserkey: friendOf(20),
					dispute: "dp_17",
					phase: "hold",
					audit,
				});
				const won = ledger.disputePhase(appid, userkey, {
					customid: "e20",
					friendUserkey: friendOf(20),
					dispute: "dp_17",
					phase: "restore",
					audit: { ...audit, entryid: "dp_17_restore" },
				});
				return { replay, limited, fresh, refunded, locking, locks, commit, held, won };
			});
			expect(result.replay.rewards).toEqual([
				expect.objectContaining({ created: false, rewarddtlid: before.find((r) => r.key === "e10:3")!.rewarddtlid }),
			]);
			expect(result.limited.skipped).toEqual([{ key: `e${EVENTS + 3}:3`, reason: "frequency_limit" }]);
			expect(result.fresh.rewards).toEqual([expect.objectContaining({ created: true, key: `e${EVENTS + 3}:5` })]);
			if (!result.refunded.ok || !result.commit.ok || !result.held.ok || !result.won.ok) throw new Error("refused");
			expect(result.refunded.rewards.map((r) => [r.key, r.rewardstatus])).toEqual([
				["e2:3", "Rejected"],
				["e2:5", "Rejected"],
				["milestone:9", "Rejected"],
			]);
			expect(result.locking).toMatchObject({ ok: true, state: "prepared" });
			expect(result.locks.map((r) => r.seq)).toEqual([seqOf("e12:3"), seqOf("e12:5")]);
			expect(result.commit.result.rewards.map((r) => [r.key, r.rewardstatus])).toEqual([
				["e12:3", "Rejected"],
				["e12:5", "Rejected"],
			]);
			expect(statusOf(result.held.rewards)).toEqual({ "e20:3": "UnderReview", "e20:5": "UnderReview" });
			expect(statusOf(result.won.rewards)).toEqual({ "e20:3": "Approved", "e20:5": "Approved" });
			// Each of those, with 300 rewards in place, sought the rewards table: no plan scans it.
			expect(rewardScans(sql, statements)).toEqual([]);
		});

		// Every reward is where it was but those the refunds took; the balance is the sum of what is left.
		const after = await stub.listRewards();
		const reversed = new Set(["e2:3", "e2:5", "milestone:9", "e7:3", "e7:5", "e12:3", "e12:5"]);
		for (const r of before) {
			const now = after.find((a) => a.rewarddtlid === r.rewarddtlid)!;
			expect(now.rewardstatus).toBe(reversed.has(r.key) ? "Rejected" : r.rewardstatus);
		}
		const left = after.filter((r) => r.rewardstatus === "Approved").reduce((sum, r) => sum + Number(r.reward), 0);
		expect((await stub.balance({}))[0]).toMatchObject({ approved: left });
	});

	it("a reward writes its row and one index entry (and its wallet entry): 3 rows, not 4; a grant key stays one reward", async () => {
		const { appid, userkey, stub } = freshLedger();
		const first = grantOf({ key: "x1:4", customid: "x1", ruleid: 4, friend: person("friend-a"), rewardemail: false, webhooks: false });
		await stub.grant(appid, userkey, [first]);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			const insert = (key: string, customid: string) =>
				sql.exec(
					`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid, campaignname,
					   growthhack, friend_userkey, created_at, updated_at)
					 VALUES (?, 4, ?, 'Purchase', 'Referrer', 100, 'USD', 'InstoreCredits', 'Approved', 1, 'c', 'g', 'friend-a', '2026-01-01', '2026-01-01')`,
					key,
					customid,
				).rowsWritten;
			// Its row, rewards_rule_friend_event and rewards_wallet (4 at step 16: rewards_event_key besides).
			expect(insert("x2:4", "x2")).toBe(3);
			// The grant key of an event stays one reward, whatever writes it (each try in a transaction of its own).
			expect(() => state.storage.transactionSync(() => insert("x1:4", "x1"))).toThrow(/UNIQUE constraint failed/);
		});
		// 20 concurrent replays of the grant find its one reward.
		const replays = await Promise.all(Array.from({ length: 20 }, () => stub.grant(appid, userkey, [first])));
		expect(replays.every((r) => r.rewards[0]?.created === false)).toBe(true);
		expect(new Set(replays.map((r) => r.rewards[0]?.rewarddtlid)).size).toBe(1);
		expect(await stub.listRewards()).toHaveLength(2);
	});
});
