import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { freshLedger, grantOf, hookedAppId } from "./support";

describe("UserLedger alarm: holds", () => {
	it("approves only UnderReview rewards whose hold ended and whose status nobody changed", async () => {
		const { appid, userkey, stub } = freshLedger(await hookedAppId());
		const past = new Date(Date.now() - 1_000).toISOString();
		const future = new Date(Date.now() + 3_600_000).toISOString();
		const { rewards } = await stub.grant(appid, userkey, [
			grantOf({ status: "UnderReview", holdUntil: past }), // ended: approves
			grantOf({ status: "UnderReview", holdUntil: past }), // kept under review by hand
			grantOf({ status: "UnderReview", holdUntil: future }), // still running
			grantOf({ status: "Suspicious", holdUntil: past }), // never approves by itself
			grantOf({ status: "UnderReview", holdUntil: past }), // flagged by hand
			grantOf({ status: "UnderReview", holdUntil: null }), // manual approval only
		]);
		const id = (i: number) => rewards[i]!.rewarddtlid;
		await stub.changeStatuses([
			{ rewarddtlid: id(1), status: "UnderReview", message: "checking" },
			{ rewarddtlid: id(4), status: "Suspicious", message: "flagged" },
		]);
		await stub.flush();

		expect(await runDurableObjectAlarm(stub)).toBe(true);
		const statuses = (await stub.listRewards()).map((r) => r.rewardstatus);
		expect(statuses).toEqual(["Approved", "UnderReview", "UnderReview", "Suspicious", "Suspicious", "UnderReview"]);
		expect((await stub.getReward(id(0)))?.holdUntil).toBeNull();
		expect((await stub.balance({}))[0]).toMatchObject({ approved: 10, pending: 50, total: 60 });

		// The approval reached D1 and the webhook outbox, through the projection queue: once its consumer acknowledged the write.
		await vi.waitFor(
			async () =>
				expect(await runInDurableObject(stub, (_l, state) => state.storage.sql.exec("SELECT id FROM outbox").toArray())).toEqual([]),
			{ timeout: 10_000, interval: 50 },
		);
		const projected = await env.DB.prepare("SELECT rewardstatus, version FROM rewards WHERE rewarddtlid = ?").bind(id(0)).first();
		expect(projected).toEqual({ rewardstatus: "Approved", version: 2 });
		const event = await env.DB.prepare("SELECT type, payload FROM outbox_events WHERE eventid = ?")
			.bind(`evt_${appid}_${userkey}_1_v2`)
			.first<{ type: string; payload: string }>();
		expect(event?.type).toBe("reward.status_changed");
		expect(JSON.parse(event!.payload)).toMatchObject({ previousstatus: "UnderReview", reward: { rewardstatus: "Approved" } });

		// What is left is the running hold: the alarm waits for it.
		const alarm = await runInDurableObject(stub, (_ledger, state) => state.storage.getAlarm());
		expect(alarm).toBe(Date.parse(future));
		// Running the alarm again early approves nothing more.
		await runDurableObjectAlarm(stub);
		expect((await stub.listRewards()).filter((r) => r.rewardstatus === "Approved")).toHaveLength(1);
	});

	it("an alarm on an empty ledger is harmless", async () => {
		const { stub } = freshLedger();
		await runInDurableObject(stub, (ledger) => ledger.alarm());
		expect(await stub.listRewards()).toEqual([]);
	});
});
