import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, request } from "../support/api";
import { createOutboxApp, hookUrl, recordWebhook, runBatch, setAnswers, uniqueKey, waitForReceived } from "./support";

describe("app webhook URL and email sender (PATCH /admin/v1/apps/:appid)", () => {
	it("sets, shows and clears them, and the consumer uses them", async () => {
		const app = await createOutboxApp();
		const key = uniqueKey("patch");

		const patched = await admin("PATCH", `/apps/${app.appid}`, { webhookurl: hookUrl(key), emailsender: "hello@shop.example.com" });
		expect(patched.status).toBe(200);
		expect(patched.body).toMatchObject({ webhookurl: hookUrl(key), emailsender: "hello@shop.example.com" });
		expect((await admin("GET", `/apps/${app.appid}`)).body).toMatchObject({
			webhookurl: hookUrl(key),
			emailsender: "hello@shop.example.com",
		});

		const event = await recordWebhook(app.appid);
		await runBatch([{ body: { eventid: event.eventid } }]);
		expect(await waitForReceived(key)).toHaveLength(1);

		const cleared = await admin("PATCH", `/apps/${app.appid}`, { webhookurl: null, emailsender: null });
		expect(cleared.body).toMatchObject({ webhookurl: null, emailsender: null });
	});

	it("refuses a webhook URL that is not http(s) and a sender that is not an address", async () => {
		const app = await createOutboxApp();
		expect((await admin("PATCH", `/apps/${app.appid}`, { webhookurl: "ftp://x.test/hook" })).status).toBe(400);
		expect((await admin("PATCH", `/apps/${app.appid}`, { emailsender: "not an address" })).status).toBe(400);
	});
});

describe("delivery log (GET /admin/v1/apps/:appid/deliveries)", () => {
	it("lists the app's events newest first with status, attempt count and latest attempt", async () => {
		const key = uniqueKey("list");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		const other = await createOutboxApp();
		await recordWebhook(other.appid);
		const delivered = await recordWebhook(app.appid, "user.registered", { userkey: "u1" });
		const retrying = await recordWebhook(app.appid, "reward.created", { rewarddtlid: "r1" });
		const pending = await recordWebhook(app.appid, "reward.redeemed", { rewarddtlid: "r1" });

		await runBatch([{ body: { eventid: delivered.eventid } }]);
		await setAnswers(key, [{ status: 502, body: "bad gateway" }, { status: 500 }]);
		await runBatch([{ body: { eventid: retrying.eventid }, attempts: 1 }]);
		await runBatch([{ body: { eventid: retrying.eventid }, attempts: 2 }]);

		const { status, body } = await admin("GET", `/apps/${app.appid}/deliveries`);
		expect(status).toBe(200);
		const byId = Object.fromEntries(body.deliveries.map((d: { eventid: string }) => [d.eventid, d]));
		expect(Object.keys(byId).sort()).toEqual([delivered.eventid, retrying.eventid, pending.eventid].sort());
		expect(byId[delivered.eventid]).toMatchObject({
			kind: "webhook",
			type: "user.registered",
			status: "delivered",
			attempts: 1,
			deliveredat: expect.any(String),
			lastattempt: { attempt: 1, outcome: "delivered", responsecode: 200, error: null },
		});
		expect(byId[retrying.eventid]).toMatchObject({
			status: "retrying",
			attempts: 2,
			deliveredat: null,
			lastattempt: { attempt: 2, outcome: "failed", responsecode: 500 },
		});
		expect(byId[pending.eventid]).toMatchObject({ status: "pending", attempts: 0, lastattempt: null });
		const times = body.deliveries.map((d: { createdat: string }) => d.createdat);
		expect(times).toEqual([...times].sort().reverse());

		const limited = await admin("GET", `/apps/${app.appid}/deliveries?limit=2`);
		expect(limited.body.deliveries).toHaveLength(2);
		// Paged by cursor: the next page goes on where the first stopped, and the pages together are the whole list.
		const next = await admin("GET", `/apps/${app.appid}/deliveries?limit=2&cursor=${limited.body.nextcursor}`);
		const paged = [...limited.body.deliveries, ...next.body.deliveries].map((d: { eventid: string }) => d.eventid);
		expect(paged).toEqual(body.deliveries.slice(0, paged.length).map((d: { eventid: string }) => d.eventid));
		expect(next.body.deliveries.length).toBeGreaterThan(0);
	});

	it("answers 400 for a bad limit and 404 for an unknown app", async () => {
		const app = await createOutboxApp();
		expect((await admin("GET", `/apps/${app.appid}/deliveries?limit=0`)).status).toBe(400);
		expect((await admin("GET", `/apps/${app.appid}/deliveries?limit=abc`)).status).toBe(400);
		expect((await admin("GET", `/apps/${app.appid}/deliveries?limit=201`)).status).toBe(400);
		const missing = await admin("GET", "/apps/app_doesnotexist/deliveries");
		expect(missing.status).toBe(404);
		expect(missing.body.errorcode).toBe("app_not_found");
	});

	it("requires the admin token", async () => {
		const app = await createOutboxApp();
		const event = await recordWebhook(app.appid);
		for (const [method, path] of [
			["GET", `/admin/v1/apps/${app.appid}/deliveries`],
			["GET", `/admin/v1/apps/${app.appid}/deliveries/${event.eventid}`],
			["POST", `/admin/v1/apps/${app.appid}/deliveries/${event.eventid}/redeliver`],
		] as const) {
			const res = await request(path, { method, headers: { authorization: "Bearer wrong" } });
			expect(res.status).toBe(401);
		}
	});
});

describe("one delivery (GET /admin/v1/apps/:appid/deliveries/:eventid)", () => {
	it("shows the event's payload and every attempt, oldest first", async () => {
		const key = uniqueKey("detail");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		await setAnswers(key, [{ status: 500, body: "nope" }]);
		const event = await recordWebhook(app.appid, "reward.status_changed", { rewarddtlid: "r9", rewardstatus: "Approved" });
		await runBatch([{ body: { eventid: event.eventid }, attempts: 1 }]);
		await runBatch([{ body: { eventid: event.eventid }, attempts: 2 }]);

		const { status, body } = await admin("GET", `/apps/${app.appid}/deliveries/${event.eventid}`);

		expect(status).toBe(200);
		expect(body).toMatchObject({
			eventid: event.eventid,
			type: "reward.status_changed",
			status: "delivered",
			attempts: 2,
			payload: { rewarddtlid: "r9", rewardstatus: "Approved" },
		});
		expect(body.attemptlog).toEqual([
			{ attempt: 1, outcome: "failed", responsecode: 500, durationms: expect.any(Number), error: "HTTP 500: nope", at: expect.any(String) },
			{ attempt: 2, outcome: "delivered", responsecode: 200, durationms: expect.any(Number), error: null, at: expect.any(String) },
		]);
	});

	it("is 404 for another app's event or an unknown one", async () => {
		const owner = await createOutboxApp();
		const stranger = await createOutboxApp();
		const event = await recordWebhook(owner.appid);
		const res = await admin("GET", `/apps/${stranger.appid}/deliveries/${event.eventid}`);
		expect(res.status).toBe(404);
		expect(res.body.errorcode).toBe("delivery_not_found");
		expect((await admin("GET", `/apps/${owner.appid}/deliveries/msg_nope`)).status).toBe(404);
	});
});

describe("redeliver (POST /admin/v1/apps/:appid/deliveries/:eventid/redeliver)", () => {
	it("sends a delivered event again through the queue, with the same webhook-id", async () => {
		const key = uniqueKey("redeliver");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		const event = await recordWebhook(app.appid, "reward.created", { rewarddtlid: "r5" });
		await runBatch([{ body: { eventid: event.eventid } }]);
		await waitForReceived(key, 1);

		const res = await admin("POST", `/apps/${app.appid}/deliveries/${event.eventid}/redeliver`);

		expect(res.status).toBe(202);
		expect(res.body).toEqual({ eventid: event.eventid, enqueued: true });
		const requests = await waitForReceived(key, 2);
		expect(requests.map((r) => r.headers["webhook-id"])).toEqual([event.eventid, event.eventid]);
		expect(JSON.parse(requests[1]!.body)).toEqual(JSON.parse(requests[0]!.body));
		// The real queue consumer logged the second attempt and marked it delivered again.
		await expect
			.poll(async () => (await admin("GET", `/apps/${app.appid}/deliveries/${event.eventid}`)).body, { timeout: 5000 })
			.toMatchObject({ status: "delivered", attempts: 2 });
	});

	it("is 404 for another app's event and changes nothing", async () => {
		const owner = await createOutboxApp();
		const stranger = await createOutboxApp();
		const event = await recordWebhook(owner.appid);
		await runBatch([{ body: { eventid: event.eventid } }]);

		const res = await admin("POST", `/apps/${stranger.appid}/deliveries/${event.eventid}/redeliver`);

		expect(res.status).toBe(404);
		expect(res.body.errorcode).toBe("delivery_not_found");
		const row = await env.DB.prepare("SELECT delivered_at FROM outbox_events WHERE eventid = ?").bind(event.eventid).first();
		expect(row?.delivered_at).toEqual(expect.any(String));
	});
});
