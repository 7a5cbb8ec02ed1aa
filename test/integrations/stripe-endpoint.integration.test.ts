import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp, request } from "../support/api";

/**
 * The Stripe webhook endpoint inside workerd (issue 23): who may call it and
 * what it refuses before any work is queued. The whole flow runs end to end
 * in test/e2e/stripe.e2e.test.ts.
 */

const SECRET = "whsec_endpointTestSecret00";

/** Stripe's signature scheme: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<payload>" under the secret>`. */
async function signature(payload: string, secret = SECRET, t = Math.floor(Date.now() / 1000)): Promise<string> {
	const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${t}.${payload}`)));
	return `t=${t},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const post = (appid: string, payload: string, sig: string) =>
	request(`/integrations/stripe/${appid}`, { method: "POST", headers: { "stripe-signature": sig }, body: payload });

async function connectedApp() {
	const app = await createApp();
	const res = await admin("PATCH", `/apps/${app.appid}`, { stripe: { secretkey: "sk_test_endpoint0000", webhooksecret: SECRET } });
	expect(res.status).toBe(200);
	return app;
}

describe("POST /integrations/stripe/{appid}", () => {
	it("is 404 for an app not connected to Stripe", async () => {
		const app = await createApp();
		const res = await post(app.appid, "{}", await signature("{}"));
		expect(res.status).toBe(404);
		expect(((await res.json()) as { errorcode: string }).errorcode).toBe("app_not_found");
	});

	it("refuses a signature of another secret, a stale one and none (400 invalid_signature), and counts nothing", async () => {
		const app = await connectedApp();
		const payload = JSON.stringify({ id: "evt_1", object: "event", type: "invoice.paid", data: { object: { id: "in_1" } } });
		for (const sig of [
			await signature(payload, "whsec_someoneElse000000"),
			await signature(payload, SECRET, Math.floor(Date.now() / 1000) - 301),
			"",
		]) {
			const res = await post(app.appid, payload, sig);
			expect(res.status).toBe(400);
			expect(((await res.json()) as { errorcode: string }).errorcode).toBe("invalid_signature");
		}
		expect((await admin("GET", `/apps/${app.appid}`)).body.stripe.events).toEqual({});
	});

	it("answers 200 to an event type it does not handle and counts it; refuses a body larger than an event (413)", async () => {
		const app = await connectedApp();
		const payload = JSON.stringify({ id: "evt_2", object: "event", type: "customer.created", data: { object: { id: "cus_1" } } });
		const res = await post(app.appid, payload, await signature(payload));
		expect(res.status).toBe(200);
		expect(await res.json()).toEqual({ received: true, handled: false });
		expect((await admin("GET", `/apps/${app.appid}`)).body.stripe.events).toEqual({ "ignored:customer.created": 1 });
		const big = JSON.stringify({ id: "evt_3", padding: "x".repeat(600 * 1024) });
		expect((await post(app.appid, big, await signature(big))).status).toBe(413);
	});

	it("connects only with keys that look like Stripe's, and an apiurl on loopback only where loopback webhooks are allowed", async () => {
		const app = await createApp();
		const bad = await admin("PATCH", `/apps/${app.appid}`, { stripe: { secretkey: "pk_test_public", webhooksecret: "nope" } });
		expect(bad.status).toBe(400);
		expect(bad.body.fields).toEqual(["stripe.secretkey", "stripe.webhooksecret"]);
		const local = await admin("PATCH", `/apps/${app.appid}`, {
			stripe: { secretkey: "sk_test_endpoint0000", webhooksecret: SECRET, apiurl: `${env.WEBHOOK_RECEIVER_URL}/stripe` },
		});
		// The test bindings allow loopback webhooks (development), so a local Stripe stand-in is allowed here too.
		expect(local.status).toBe(200);
		const privateNet = await admin("PATCH", `/apps/${app.appid}`, {
			stripe: { secretkey: "sk_test_endpoint0000", webhooksecret: SECRET, apiurl: "http://10.0.0.8/stripe" },
		});
		expect(privateNet).toMatchObject({ status: 400, body: { fields: ["stripe.apiurl"] } });
	});
});
