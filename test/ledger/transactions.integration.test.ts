import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runAcrossLedgers } from "../../src/coordination/ledger-transaction";
import { decideOnce } from "../../src/db/decisions";
import { newAppId } from "../../src/domain/ids";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import type { LedgerOperation } from "../../src/ledger/transaction-types";
import { freshLedger, grantOf } from "./support";

/** A ledger of a fresh user with `n` approved 10 USD rewards. */
async function ledgerWith(n: number, appid = newAppId()) {
	const ledger = freshLedger(appid);
	const { rewards } = await ledger.stub.grant(
		appid,
		ledger.userkey,
		Array.from({ length: n }, () => grantOf()),
	);
	return { ...ledger, ids: rewards.map((r) => r.rewarddtlid) };
}

const reject = (...ids: string[]): LedgerOperation => ({
	kind: "status",
	changes: ids.map((rewarddtlid) => ({ rewarddtlid, status: "Rejected", message: "fraud" })),
});

/** Makes every prepared lease of the ledger end now (instead of waiting for the clock). */
const endLeases = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => {
		state.storage.sql.exec("UPDATE ledger_transactions SET lease_until = 0 WHERE state = 'prepared'");
	});
const runAlarm = (stub: ReturnType<typeof freshLedger>["stub"]) => runInDurableObject(stub, (ledger) => ledger.alarm());
const locks = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => state.storage.sql.exec("SELECT seq, txid FROM reward_locks ORDER BY seq").toArray());

describe("UserLedger prepare / commit / abort", () => {
	it("a prepared transaction locks its rewards against redemptions and other changes until commit", async () => {
		const { stub, ids } = await ledgerWith(2);
		const [a, b] = ids as [string, string];
		expect(await stub.prepareTransaction("tx_one", reject(a), 15_000)).toMatchObject({ ok: true, state: "prepared" });
		const locked = { ok: false, error: { code: "reward_locked", rewarddtlid: a } };
		expect(await stub.redeemByIds([a])).toMatchObject(locked);
		// By amount: 15 needs the locked reward (the oldest) -> refused whole, nothing redeemed.
		expect(await stub.redeemByAmount({ amount: 15 })).toMatchObject(locked);
		expect(await stub.changeStatuses([{ rewarddtlid: a, status: "UnderReview", message: null }])).toMatchObject(locked);
		expect(await stub.prepareTransaction("tx_two", reject(a, b), 15_000)).toMatchObject(locked);
		// The other reward is free.
		expect(await stub.redeemByIds([b])).toMatchObject({ ok: true, redeemed: 10 });
		// Prepare is idempotent per txid.
		expect(await stub.prepareTransaction("tx_one", reject(a), 15_000)).toMatchObject({ ok: true, state: "prepared" });

		const committed = await stub.commitTransaction("tx_one");
		expect(committed).toMatchObject({ ok: true, result: { rewards: [{ rewarddtlid: a, rewardstatus: "Rejected" }] } });
		expect(await locks(stub)).toEqual([]);
		expect(await stub.commitTransaction("tx_one")).toEqual(committed);
		expect(await stub.prepareTransaction("tx_one", reject(a), 15_000)).toEqual({ ok: true, state: "committed" });
		expect((await stub.getReward(a))?.rewardstatus).toBe("Rejected");
		expect((await stub.balance({}))[0]).toMatchObject({ approved: 0, claimed: 10, total: 10 });
	});

	it("a prepare that would fail locks nothing; abort releases without applying; a late prepare of an aborted txid is refused", async () => {
		const { stub, ids } = await ledgerWith(1);
		const [a] = ids as [string];
		expect(await stub.prepareTransaction("tx_bad", reject(a, `${a}9`), 15_000)).toMatchObject({
			ok: false,
			error: { code: "reward_not_found" },
		});
		expect(await locks(stub)).toEqual([]);
		expect(await stub.prepareTransaction("tx_ab", reject(a), 15_000)).toMatchObject({ ok: true });
		expect(await stub.abortTransaction("tx_ab")).toEqual({ ok: true, state: "aborted" });
		expect(await locks(stub)).toEqual([]);
		expect(await stub.commitTransaction("tx_ab")).toMatchObject({ ok: false, error: { code: "transaction_aborted" } });
		expect((await stub.getReward(a))?.rewardstatus).toBe("Approved");
		// An abort that overtook its prepare: the prepare that arrives later is refused.
		expect(await stub.abortTransaction("tx_late")).toEqual({ ok: true, state: "aborted" });
		expect(await stub.prepareTransaction("tx_late", reject(a), 15_000)).toMatchObject({
			ok: false,
			error: { code: "transaction_aborted" },
		});
		expect(await stub.redeemByIds([a])).toMatchObject({ ok: true });
	});

	it("at the end of its lease with no decision, the ledger records abort in D1 and releases the locks, also after eviction", async () => {
		const { appid, stub, ids } = await ledgerWith(1);
		const [a] = ids as [string];
		await stub.prepareTransaction("tx_exp1", reject(a), 15_000);
		await evictDurableObject(stub);
		expect(await locks(stub)).toHaveLength(1);
		await endLeases(stub);
		await runAlarm(stub);
		expect(await locks(stub)).toEqual([]);
		expect((await stub.getReward(a))?.rewardstatus).toBe("Approved");
		// The coordinator, arriving late, cannot commit any more: the first decision stands.
		expect(await decideOnce(env.DB, appid, "tx_exp1", "commit")).toBe("abort");
	});

	it("at the end of its lease with the decision commit stored, the ledger applies it (the commit call was lost)", async () => {
		const { appid, stub, ids } = await ledgerWith(1);
		const [a] = ids as [string];
		await stub.prepareTransaction("tx_exp2", reject(a), 15_000);
		expect(await decideOnce(env.DB, appid, "tx_exp2", "commit")).toBe("commit");
		await endLeases(stub);
		await runAlarm(stub);
		expect(await locks(stub)).toEqual([]);
		expect((await stub.getReward(a))?.rewardstatus).toBe("Rejected");
		expect(await stub.commitTransaction("tx_exp2")).toMatchObject({ ok: true, result: { rewards: [{ rewardstatus: "Rejected" }] } });
	});

	it("a commit that throws something other than a refusal releases its locks, by call and at lease end", async () => {
		for (const via of ["call", "lease end"] as const) {
			const { appid, stub, ids } = await ledgerWith(1);
			const [a] = ids as [string];
			await stub.prepareTransaction("tx_broken", reject(a), 15_000);
			// A stored payload this code cannot apply: the commit throws inside the ledger's transaction.
			await runInDurableObject(stub, (_l, state) => {
				state.storage.sql.exec(`UPDATE ledger_transactions SET payload = '{"kind":"status","changes":"not a list"}'`);
			});
			expect(await decideOnce(env.DB, appid, "tx_broken", "commit")).toBe("commit");
			if (via === "call") {
				expect(await stub.commitTransaction("tx_broken")).toMatchObject({ ok: false, error: { code: "transaction_aborted" } });
			} else {
				await endLeases(stub);
				await runAlarm(stub);
			}
			expect(await locks(stub)).toEqual([]);
			expect(await stub.redeemByIds([a])).toMatchObject({ ok: true });
		}
	});

	it("a hold that ends while its reward is locked waits for the lock", async () => {
		const ledger = freshLedger();
		const { rewards } = await ledger.stub.grant(ledger.appid, ledger.userkey, [
			grantOf({ status: "UnderReview", holdUntil: new Date(Date.now() - 1000).toISOString() }),
		]);
		const id = rewards[0]!.rewarddtlid;
		await ledger.stub.prepareTransaction(
			"tx_hold",
			{ kind: "status", changes: [{ rewarddtlid: id, status: "Suspicious", message: "x" }] },
			15_000,
		);
		await runAlarm(ledger.stub);
		expect((await ledger.stub.getReward(id))?.rewardstatus).toBe("UnderReview");
		await ledger.stub.abortTransaction("tx_hold");
		await runAlarm(ledger.stub);
		expect((await ledger.stub.getReward(id))?.rewardstatus).toBe("Approved");
	});

	it("stores its schema version and reaches the newest one", async () => {
		const { stub } = await ledgerWith(1);
		const version = await runInDurableObject(stub, (_l, state) =>
			state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").one(),
		);
		expect(Number(version.value)).toBe(LEDGER_MIGRATIONS.length);
	});
});

describe("runAcrossLedgers", () => {
	it("applies every part or none", async () => {
		const appid = newAppId();
		const one = await ledgerWith(1, appid);
		const two = await ledgerWith(1, appid);
		const bad = await runAcrossLedgers(env, appid, [
			{ userkey: one.userkey, operation: reject(one.ids[0]!) },
			{ userkey: two.userkey, operation: reject(`${two.ids[0]!}7`) },
		]);
		expect(bad).toMatchObject({ ok: false, error: { code: "reward_not_found" } });
		expect((await one.stub.getReward(one.ids[0]!))?.rewardstatus).toBe("Approved");
		expect(await locks(one.stub)).toEqual([]);

		const good = await runAcrossLedgers(env, appid, [
			{ userkey: one.userkey, operation: reject(one.ids[0]!) },
			{ userkey: two.userkey, operation: reject(two.ids[0]!) },
		]);
		expect(good).toMatchObject({ ok: true, txid: expect.stringMatching(/^tx_/) });
		expect((await one.stub.getReward(one.ids[0]!))?.rewardstatus).toBe("Rejected");
		expect((await two.stub.getReward(two.ids[0]!))?.rewardstatus).toBe("Rejected");
		expect([...(await locks(one.stub)), ...(await locks(two.stub))]).toEqual([]);
	});

	it("a part locked by another transaction refuses the whole change with reward_locked", async () => {
		const appid = newAppId();
		const one = await ledgerWith(1, appid);
		const two = await ledgerWith(1, appid);
		await two.stub.prepareTransaction("tx_other", reject(two.ids[0]!), 15_000);
		const result = await runAcrossLedgers(env, appid, [
			{ userkey: one.userkey, operation: reject(one.ids[0]!) },
			{ userkey: two.userkey, operation: reject(two.ids[0]!) },
		]);
		expect(result).toMatchObject({ ok: false, error: { code: "reward_locked" } });
		expect((await one.stub.getReward(one.ids[0]!))?.rewardstatus).toBe("Approved");
		expect(await locks(one.stub)).toEqual([]);
	});
});
