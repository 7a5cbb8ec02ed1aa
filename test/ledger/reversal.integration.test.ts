import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { decideOnce } from "../../src/db/decisions";
import { newAppId } from "../../src/domain/ids";
import type { ReverseOperation } from "../../src/ledger/transaction-types";
import { freshLedger, grantOf } from "./support";

/** A refund of event `customid` (transaction value 100.00); amounts in hundredths. */
const refund = (customid: string, refundid: string, refundvalue: number | null): ReverseOperation => ({
	kind: "reverse",
	customid,
	refundid,
	refundvalue,
	transactionvalue: 10_000,
	reason: null,
});

const unlock = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM reward_locks").one().n);

describe("UserLedger: the reverse operation", () => {
	it("a prepared refund locks the event's rewards and keeps a second refund of the event out, even without rewards", async () => {
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [grantOf({ customid: "501", key: "501:1", amount: 20, percent: true })]);
		const id = rewards[0]!.rewarddtlid;
		expect(await stub.prepareTransaction("tx_r1", refund("501", "a", 5_000), 15_000)).toMatchObject({ ok: true, state: "prepared" });
		expect(await stub.redeemByIds([id])).toMatchObject({ ok: false, error: { code: "reward_locked" } });
		expect(await stub.prepareTransaction("tx_r2", refund("501", "b", 5_000), 15_000)).toMatchObject({
			ok: false,
			error: { code: "reward_locked" },
		});
		expect(await stub.execute(refund("501", "b", 5_000))).toMatchObject({ ok: false, error: { code: "reward_locked" } });
		// Another event is not held up; an event with no reward here is held up just the same.
		expect(await stub.prepareTransaction("tx_r3", refund("999", "a", 100), 15_000)).toMatchObject({ ok: true, state: "prepared" });
		expect(await stub.execute(refund("999", "b", 100))).toMatchObject({ ok: false, error: { code: "reward_locked" } });

		expect(await stub.commitTransaction("tx_r1")).toMatchObject({ ok: true, result: { reversal: { refunded: 50, changed: true } } });
		expect(await stub.abortTransaction("tx_r3")).toEqual({ ok: true, state: "aborted" });
		expect(await unlock(stub)).toBe(0);
		expect(await stub.getReward(id)).toMatchObject({ reward: "10", reversedamount: "10", rewardstatus: "Approved" });
		// The second refund now finds 50 already refunded: 60 more is too much, 50 completes it.
		expect(await stub.execute(refund("501", "b", 6_000))).toMatchObject({ ok: false, error: { code: "refund_exceeds_transaction" } });
		expect(await stub.execute(refund("501", "b", 5_000))).toMatchObject({ ok: true, reversal: { refunded: 100, full: true } });
		expect(await stub.getReward(id)).toMatchObject({ reward: "0", rewardstatus: "Rejected" });
	});

	it("a reward granted after its event was refunded is born reversed", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf({ customid: "601", key: "601:1", amount: 20, percent: true })]);
		expect(await stub.execute(refund("601", "half", 5_000))).toMatchObject({ ok: true });
		// A retried registerconversionevent completes a reward the first call missed.
		const late = await stub.grant(appid, userkey, [
			grantOf({ customid: "601", key: "601:2", amount: 8, percent: true }),
			grantOf({ customid: "601", key: "601:3", amount: 5 }),
		]);
		expect(late.rewards.map((r) => [r.reward, r.reversedamount, r.rewardstatus])).toEqual([
			["4", "4", "Approved"],
			["5", "0", "Approved"],
		]);
		await stub.execute(refund("601", "full", null));
		const later = await stub.grant(appid, userkey, [grantOf({ customid: "601", key: "601:4", amount: 7 })]);
		expect(later.rewards[0]).toMatchObject({ reward: "0", rewardstatus: "Rejected", reversed: true });
		expect((await stub.balance({}))[0]).toMatchObject({ total: 0, approved: 0, owed: 0 });
	});

	it("a refund whose coordinator died after deciding commit is applied by each ledger at lease end, once", async () => {
		const appid = newAppId();
		const friend = freshLedger(appid);
		const referrer = freshLedger(appid);
		await friend.stub.grant(appid, friend.userkey, [grantOf({ customid: "701", key: "701:1", amount: 5 })]);
		await referrer.stub.grant(appid, referrer.userkey, [grantOf({ customid: "701", key: "701:2", amount: 20, percent: true })]);
		await referrer.stub.redeemByAmount({ amount: 15 });
		const op = refund("701", "full", null);
		for (const l of [friend, referrer]) expect(await l.stub.prepareTransaction("tx_dead", op, 15_000)).toMatchObject({ ok: true });
		expect(await decideOnce(env.DB, appid, "tx_dead", "commit")).toBe("commit");
		// The coordinator is gone; the objects are evicted; the leases end and the alarms run.
		for (const l of [friend, referrer]) {
			await evictDurableObject(l.stub);
			await runInDurableObject(l.stub, (_l, state) => {
				state.storage.sql.exec("UPDATE ledger_transactions SET lease_until = 0 WHERE state = 'prepared'");
			});
			await runInDurableObject(l.stub, (ledger) => ledger.alarm());
			await runInDurableObject(l.stub, (ledger) => ledger.alarm());
		}
		expect((await friend.stub.listRewards()).map((r) => r.rewardstatus)).toEqual(["Rejected"]);
		expect((await referrer.stub.listRewards()).map((r) => [r.rewardstatus, r.reversedAmount])).toEqual([["Rejected", 20]]);
		expect((await referrer.stub.listClawbacks()).map((c) => c.amount)).toEqual([1500]);
		expect((await referrer.stub.balance({}))[0]).toMatchObject({ total: 0, approved: 0, claimed: 0, owed: 15 });
		// A late commit from a revived coordinator changes nothing more.
		expect(await referrer.stub.commitTransaction("tx_dead")).toMatchObject({ ok: true });
		expect(await referrer.stub.listClawbacks()).toHaveLength(1);
	});
});
