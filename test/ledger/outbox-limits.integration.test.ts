import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { queueWebhook } from "../../src/ledger/outbox";
import { webhookEvent } from "../../src/outbox/events";
import { waitForReceived } from "../outbox/support";
import { freshLedger, grantOf, hookedAppId } from "./support";

/**
 * Issue 20 item 3: a flush once sent up to 100 queued events, each carrying
 * its payload, in ONE sendBatch; Cloudflare Queues refuse a batch over 256 KB
 * (and a message over 128 KB), so 100 large events failed on every later
 * flush and never left the ledger.
 */

const outboxCount = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n);

describe("UserLedger outbox within the Queues limits", () => {
	it("150 large events (20 KB each, three of 150 KB) all leave the ledger and reach the receiver once each", async () => {
		const appid = await hookedAppId();
		const { userkey, stub } = freshLedger(appid);
		// A real write first, so the ledger exists and is migrated as in production.
		await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		const large = "x".repeat(20_000);
		// 50,000 characters but 150,000 bytes of UTF-8: over a message's 128 KB, so it must travel by reference.
		const huge = "€".repeat(50_000);
		const ids = await runInDurableObject(stub, (_l, state) => {
			const queued: string[] = [];
			for (let i = 0; i < 150; i++) {
				const event = webhookEvent(appid, "reward.redeemed", { userkey, i, note: i % 50 === 7 ? huge : large });
				queueWebhook(state.storage.sql, event, Date.now());
				queued.push(event.eventid);
			}
			return queued;
		});

		await stub.flush();
		expect(await outboxCount(stub)).toBe(0);
		const recorded = await env.DB.prepare(
			"SELECT COUNT(*) AS n FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?)) AND enqueued_at IS NOT NULL",
		)
			.bind(JSON.stringify(ids))
			.first<{ n: number }>();
		expect(recorded?.n).toBe(150);

		// Through the real queue and consumer: every event arrives, the 150 KB ones read from D1 by id.
		const got = await waitForReceived(appid, 151, 60_000);
		const byId = new Map(got.map((r) => [r.headers["webhook-id"], r]));
		for (const id of ids) expect(byId.has(id), id).toBe(true);
		expect(got.length).toBe(byId.size);
		const hugeOne = byId.get(ids[7]!);
		expect(JSON.parse(hugeOne!.body)).toMatchObject({ type: "reward.redeemed", data: { i: 7, note: huge } });
	}, 90_000);
});
