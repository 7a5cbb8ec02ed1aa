import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { signWebhook } from "../../src/outbox/signature";
import { admin, client } from "../support/api";
import { createOutboxApp, hookUrl, received, recordWebhook, runBatch, uniqueKey } from "./support";

/** Test mode (docs/test-mode.md): webhooks and emails say which mode made them. */
describe("livemode in payloads", () => {
	it("delivers a test webhook with livemode false and a live one with livemode true, to the one URL, signed with the one secret", async () => {
		const key = uniqueKey("livemode");
		const app = (await createOutboxApp({ webhookurl: hookUrl(key) })) as Awaited<ReturnType<typeof createOutboxApp>> & {
			webhooksecret: string;
		};
		const live = await recordWebhook(app.appid);
		const test = await recordWebhook(`${app.appid}_test`);
		await runBatch([{ body: { eventid: live.eventid } }, { body: { eventid: test.eventid } }]);
		const got = await received(key);
		expect(got).toHaveLength(2);
		const byId = new Map(got.map((r) => [r.headers["webhook-id"], r]));
		expect(JSON.parse(byId.get(live.eventid)!.body)).toMatchObject({ type: "reward.created", livemode: true });
		expect(JSON.parse(byId.get(test.eventid)!.body)).toMatchObject({ type: "reward.created", livemode: false });
		for (const r of got) {
			const signature = await signWebhook(app.webhooksecret, r.headers["webhook-id"]!, Number(r.headers["webhook-timestamp"]), r.body);
			expect(r.headers["webhook-signature"]).toBe(signature);
		}
	});

	it("records an email of the test keys with livemode false, and a live one with livemode true", async () => {
		const app = await createOutboxApp({});
		const { testapikey, testprivatekey } = app as typeof app & { testapikey: string; testprivatekey: string };
		const test = client({ apikey: testapikey, privatekey: testprivatekey });
		const liveApi = client(app);
		const campaign = { campaignname: "C", campaignstartdate: "2026-01-01T00:00:00Z", rewardrules: [] };
		expect((await admin("POST", `/apps/${app.appid}/campaigns`, campaign)).status).toBe(201);
		expect((await test("invokeoutreach", { email: "t@x.com", name: "T" })).status).toBe(200);
		expect((await liveApi("invokeoutreach", { email: "l@x.com", name: "L" })).status).toBe(200);
		const rows = await env.DB.prepare("SELECT appid, payload FROM outbox_events WHERE appid IN (?, ?) AND kind = 'email'")
			.bind(app.appid, `${app.appid}_test`)
			.all<{ appid: string; payload: string }>();
		const modes = Object.fromEntries(rows.results.map((r) => [r.appid, JSON.parse(r.payload).livemode]));
		expect(modes).toEqual({ [app.appid]: true, [`${app.appid}_test`]: false });
	});
});
