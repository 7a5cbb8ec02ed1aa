import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { couponClaimStatement } from "../../src/db/projection";
import type { LedgerOutboxEntry } from "../../src/ledger/schema";
import { createApp } from "../support/api";
import { freshLedger, grantOf, hookedAppId } from "./support";

/**
 * Failures between the ledger's commit and the delivery of its outbox. D1 is
 * made unavailable for real (the projection table is renamed away), so this
 * file runs alone: its tests share one D1.
 */

const outbox = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => state.storage.sql.exec<LedgerOutboxEntry>("SELECT * FROM outbox ORDER BY id").toArray());
const eventsOf = async (appid: string) =>
	(await env.DB.prepare("SELECT eventid, type, enqueued_at FROM outbox_events WHERE appid = ? ORDER BY eventid").bind(appid).all()).results;

describe("UserLedger outbox under failure", () => {
	it("a grant whose flush fails is completed by the alarm, once, also after the object died", async () => {
		const { appid, userkey, stub } = freshLedger(await hookedAppId());
		await env.DB.exec("ALTER TABLE rewards RENAME TO rewards_offline");
		try {
			const { rewards } = await stub.grant(appid, userkey, [grantOf({ amount: 3 })]);
			// The answer is acknowledged: the reward and balance exist whatever D1 does.
			expect(rewards[0]!.created).toBe(true);
			const report = await stub.flush();
			expect(report.pending).toBe(2);
			const waiting = await outbox(stub);
			expect(waiting.map((e) => [e.kind, e.attempts])).toEqual([
				["projection", 1],
				["webhook", 1],
			]);
			expect(waiting[0]!.last_error).toMatch(/rewards/);
			// The D1 batch is one transaction: the event was not recorded without its projection.
			expect(await eventsOf(appid)).toEqual([]);
			// The object goes away: in-memory state is gone, the alarm and the outbox are not.
			await evictDurableObject(stub);
		} finally {
			await env.DB.exec("ALTER TABLE rewards_offline RENAME TO rewards");
		}
		await runInDurableObject(stub, (_l, state) => state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0"));
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		// The alarm's flush goes through the projection queue: the entries go once its consumer acknowledges the write.
		await vi.waitFor(async () => expect(await outbox(stub)).toEqual([]), { timeout: 10_000, interval: 50 });
		expect(
			await env.DB.prepare("SELECT version, reward FROM rewards WHERE userkey = ?")
				.bind(userkey)
				.all()
				.then((r) => r.results),
		).toEqual([{ version: 1, reward: 3 }]);
		expect(await eventsOf(appid)).toEqual([
			{ eventid: `evt_${appid}_${userkey}_1_v1`, type: "reward.created", enqueued_at: expect.any(String) },
		]);
	});

	it("replaying entries that were delivered but not yet deleted duplicates nothing", async () => {
		const { appid, userkey, stub } = freshLedger(await hookedAppId());
		const { rewards } = await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		await stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "Suspicious", message: "check" }]);
		const snapshot = await outbox(stub);
		expect(snapshot.map((e) => e.kind)).toEqual(["projection", "webhook"]);
		await stub.flush();
		const enqueued = await eventsOf(appid);
		// Died after D1 committed but before the entries were deleted: they come back.
		await runInDurableObject(stub, (_l, state) => {
			for (const e of snapshot) {
				state.storage.sql.exec(
					"INSERT INTO outbox (id, kind, ref, payload, version, attempts, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, 0, 0, ?)",
					e.id,
					e.kind,
					e.ref,
					e.payload,
					e.version,
					e.created_at,
				);
			}
		});
		expect(await stub.flush()).toMatchObject({ pending: 0 });
		expect(await eventsOf(appid)).toEqual(enqueued);
		expect(enqueued).toHaveLength(2);
		expect(await env.DB.prepare("SELECT rewardstatus, version FROM rewards WHERE userkey = ?").bind(userkey).first()).toEqual({
			rewardstatus: "Suspicious",
			version: 2,
		});
	});

	it("a restarted object re-arms a missing alarm when work is pending", async () => {
		const { appid, userkey, stub } = freshLedger(await hookedAppId());
		await stub.grant(appid, userkey, [grantOf()]);
		// As if the process died after the commit but before the alarm was stored.
		await runInDurableObject(stub, async (_l, state) => {
			state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0");
			await state.storage.deleteAlarm();
		});
		await evictDurableObject(stub);
		expect(await stub.listRewards()).toHaveLength(1);
		expect(await runInDurableObject(stub, (_l, state) => state.storage.getAlarm())).not.toBeNull();
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		await vi.waitFor(async () => expect(await outbox(stub)).toEqual([]), { timeout: 10_000, interval: 50 });
	});

	it("a replayed coupon claim returns the code the reward already holds", async () => {
		const { campaignid } = await createApp({ distribution: "Coupon" });
		await env.DB.prepare("INSERT INTO coupons (campaignid, coupon) VALUES (?, 'X1'), (?, 'X2')").bind(campaignid, campaignid).run();
		const claim = { seq: 1, couponKey: "app:user:k1", campaignid, livemode: true };
		const now = new Date().toISOString();
		const first = await couponClaimStatement(env.DB, claim, now).first<{ coupon: string }>();
		const again = await couponClaimStatement(env.DB, claim, now).first<{ coupon: string }>();
		const other = await couponClaimStatement(env.DB, { ...claim, couponKey: "app:user:k2" }, now).first<{ coupon: string }>();
		const none = await couponClaimStatement(env.DB, { ...claim, couponKey: "app:user:k3" }, now).first();
		expect([first?.coupon, again?.coupon, other?.coupon, none]).toEqual(["X1", "X1", "X2", null]);
	});
});
