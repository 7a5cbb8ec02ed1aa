import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { stripeConnection } from "../../src/integrations/stripe/connection";
import { admin, createApp, request } from "../support/api";

/** Test mode's Stripe connection (docs/test-mode.md): `teststripe`, a test key only, and events of one mode never touch the other. */

const LIVE_SECRET = "whsec_liveModeSecret000";
const TEST_SECRET = "whsec_testModeSecret000";

async function signature(payload: string, secret: string, t = Math.floor(Date.now() / 1000)): Promise<string> {
	const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${t}.${payload}`)));
	return `t=${t},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function post(appid: string, livemode: boolean, secret: string) {
	const payload = JSON.stringify({
		id: `evt_${crypto.randomUUID()}`,
		object: "event",
		livemode,
		type: "customer.created",
		data: { object: { id: "cus_1" } },
	});
	const res = await request(`/integrations/stripe/${appid}`, {
		method: "POST",
		headers: { "stripe-signature": await signature(payload, secret) },
		body: payload,
	});
	return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function bothConnected() {
	const app = await createApp();
	const res = await admin("PATCH", `/apps/${app.appid}`, {
		stripe: { secretkey: "sk_live_liveKey00000", webhooksecret: LIVE_SECRET },
		teststripe: { secretkey: "sk_test_testKey00000", webhooksecret: TEST_SECRET },
	});
	expect(res.status).toBe(200);
	return { app, view: res.body };
}

describe("teststripe", () => {
	it("takes a test key only, and is shown beside stripe with its own endpoint", async () => {
		const app = await createApp();
		const live = await admin("PATCH", `/apps/${app.appid}`, {
			teststripe: { secretkey: "sk_live_liveKey00000", webhooksecret: TEST_SECRET },
		});
		expect(live.status).toBe(400);
		expect(live.body.fields).toEqual(["teststripe.secretkey"]);
		const { view } = await bothConnected();
		expect(view.stripe).toMatchObject({ connected: true, secretkeylast4: "0000" });
		expect(view.teststripe).toMatchObject({ connected: true, secretkeylast4: "0000" });
		expect(view.teststripe.webhookurl).toMatch(/\/integrations\/stripe\/app_[a-z0-9]+_test$/);
		expect(view.stripe.webhookurl).not.toBe(view.teststripe.webhookurl);
	});

	it("pays test rewards only through the test connection: the twin's connection is its own, never the live one", async () => {
		const app = await createApp();
		await admin("PATCH", `/apps/${app.appid}`, { stripe: { secretkey: "sk_live_liveKey00000", webhooksecret: LIVE_SECRET } });
		// Live connected, test not: a payout of a test reward finds no connection (and fails visibly, docs/stripe.md).
		expect(await stripeConnection(env, `${app.appid}_test`)).toBeNull();
		expect((await stripeConnection(env, app.appid))?.livemode).toBe(true);
		await admin("PATCH", `/apps/${app.appid}`, { teststripe: { secretkey: "sk_test_testKey00000", webhooksecret: TEST_SECRET } });
		expect((await stripeConnection(env, `${app.appid}_test`))?.livemode).toBe(false);
		// Disconnecting test leaves live connected.
		await admin("PATCH", `/apps/${app.appid}`, { teststripe: null });
		expect(await stripeConnection(env, `${app.appid}_test`)).toBeNull();
		expect(await stripeConnection(env, app.appid)).not.toBeNull();
	});

	it("leaves an event of one mode alone at the other's endpoint", async () => {
		const { app } = await bothConnected();
		// Each endpoint verifies with its own secret: the other mode's signature is refused.
		expect((await post(app.appid, false, TEST_SECRET)).status).toBe(400);
		expect((await post(`${app.appid}_test`, true, LIVE_SECRET)).status).toBe(400);
		// Signed right but of the other mode: counted, not handled.
		expect((await post(app.appid, false, LIVE_SECRET)).body).toEqual({ received: true, handled: false });
		expect((await post(`${app.appid}_test`, true, TEST_SECRET)).body).toEqual({ received: true, handled: false });
		const view = (await admin("GET", `/apps/${app.appid}`)).body;
		expect(view.stripe.events).toEqual({ "ignored:testmode_at_live_endpoint": 1 });
		expect(view.teststripe.events).toEqual({ "ignored:livemode_at_test_endpoint": 1 });
		// Its own mode's event goes on as before (an unhandled type here: counted by type).
		await post(`${app.appid}_test`, false, TEST_SECRET);
		expect((await admin("GET", `/apps/${app.appid}`)).body.teststripe.events).toMatchObject({ "ignored:customer.created": 1 });
	});

	it("needs the test keys first", async () => {
		const app = await createApp();
		await env.DB.prepare("DELETE FROM apps WHERE live_appid = ?").bind(app.appid).run();
		const res = await admin("PATCH", `/apps/${app.appid}`, {
			teststripe: { secretkey: "sk_test_testKey00000", webhooksecret: TEST_SECRET },
		});
		expect(res.status).toBe(400);
		expect(res.body.fields).toEqual(["teststripe"]);
	});
});
