import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { app as worker } from "../../src/http/app";
import { renderHeaders } from "../../src/outbox/mail-headers";
import { createOutboxApp, recordEmail, runBatch } from "../outbox/support";
import { admin, call, createApp, request } from "../support/api";

afterEach(() => {
	vi.restoreAllMocks();
});

const post = (operation: string, text: string, headers: Record<string, string> = {}) =>
	request(`/saas/v1_0/${operation}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: text });

describe("body limits come before authentication", () => {
	it("a 20,000-level body is 400 body_too_complex, without credentials, not a 500", async () => {
		const res = await post("register", `{"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}`);
		expect(res.status).toBe(400);
		expect(await res.json()).toMatchObject({ success: false, errorcode: "body_too_complex" });
	});
	it("so is a deep object on the admin API, and a list over 1,000 entries", async () => {
		let deep = "1";
		for (let i = 0; i < 2_500; i++) deep = `{"a":${deep}}`;
		const adminRes = await admin("POST", "/apps", JSON.parse(deep));
		expect(adminRes).toMatchObject({ status: 400, body: { errorcode: "body_too_complex" } });
		const list = await call("redeemrewards", { apikey: "x", privatekey: "y", rewarddtlids: Array(1_001).fill("r") });
		expect(list).toMatchObject({ status: 400, body: { errorcode: "body_too_complex", fields: ["rewarddtlids"] } });
	});
});

describe("text hygiene", () => {
	it("refuses a CR/LF name, raw or URL-encoded, naming the field; nothing is stored", async () => {
		const { api, appid } = await createApp();
		for (const name of ["Eve\r\nBcc: victim@evil.test", "Mallory%0D%0ABcc:+victim@evil.test", "Nul\u0000", "\ud800"]) {
			const res = await api("register", { email: "eve@example.com", name });
			expect(res.status, name).toBe(400);
			expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: ["name"] });
		}
		const res = await api("invokeoutreach", { emailId: "eve@example.com", AppUserName: "Mallory%0D%0ABcc:+victim@evil.test" });
		expect(res.body.fields).toEqual(["name"]);
		const users = await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE appid = ?").bind(appid).first<{ n: number }>();
		expect(users?.n).toBe(0);
		// Free text keeps its line feeds.
		expect((await api("register", { email: "ok@example.com", extrainfo: "line 1%0Aline 2" })).status).toBe(200);
	});
	it("the admin API refuses control characters too", async () => {
		expect(await admin("POST", "/apps", { name: "Shop\r\nX-Evil: 1" })).toMatchObject({ status: 400, body: { fields: ["name"] } });
	});
	it("an email stored before the rule, with CR/LF in name and subject, is sent with one-line headers", async () => {
		const app = await createOutboxApp();
		const event = await recordEmail(app.appid, {
			to: "victim@example.com",
			toName: "Eve\r\nBcc: victim@evil.test",
			subject: "Hi\r\nBcc: list@evil.test",
			text: "t",
			html: "<p>t</p>",
		});
		const sent: any[] = [];
		const fakeEnv = { ...env, EMAIL: { send: async (message: unknown) => sent.push(message) } } as unknown as Env;
		await runBatch([{ body: { eventid: event.eventid } }], fakeEnv);
		expect(sent).toHaveLength(1);
		expect(sent[0].to).toEqual({ name: "Eve Bcc: victim@evil.test", email: "victim@example.com" });
		expect(sent[0].subject).toBe("Hi Bcc: list@evil.test");
		// Rendered as a message header block, it has exactly its three headers.
		const block = renderHeaders({ from: sent[0].from, to: sent[0].to.email, toName: sent[0].to.name, subject: sent[0].subject });
		expect(block.split("\r\n").map((line) => line.split(":")[0])).toEqual(["From", "To", "Subject"]);
	});
});

/** Runs `attempt` until it starts and ends within one 10 s window of the limiters (fixed windows); at most 3 tries. */
async function inOneWindow<T>(attempt: (round: number) => Promise<T>): Promise<T> {
	for (let round = 0; ; round++) {
		const window = Math.floor(Date.now() / 10_000);
		const result = await attempt(round);
		if (Math.floor(Date.now() / 10_000) === window || round >= 2) return result;
	}
}

describe("rate limits", () => {
	it("the 21st wrong key within 10 s is 429 with Retry-After, while another app's valid calls succeed", async () => {
		const victim = await createApp();
		const other = await createApp();
		// Each round from its own address, so a round cut by a window boundary leaves nothing behind.
		const { statuses, last } = await inOneWindow(async (round) => {
			const seen: number[] = [];
			let res: Response | undefined;
			for (let i = 0; i < 21; i++) {
				res = await post("getcampaigndata", JSON.stringify({ apikey: victim.apikey, privatekey: "wrong", campaignid: "1" }), {
					"cf-connecting-ip": `203.0.113.${9 + round}`,
				});
				seen.push(res.status);
				if (i < 20) await res.body?.cancel();
			}
			return { statuses: seen, last: { retryAfter: res!.headers.get("retry-after"), body: await res!.json() } };
		});
		expect(statuses).toEqual([...Array(20).fill(401), 429]);
		expect(last).toMatchObject({ retryAfter: "10", body: { errorcode: "rate_limited" } });
		// Another app, and the same app from another address, are not limited.
		expect((await other.api("getcampaigndata", { campaignid: other.campaignid })).status).toBe(200);
		const elsewhere = await post("getcampaigndata", JSON.stringify({ apikey: victim.apikey, privatekey: "wrong" }), {
			"cf-connecting-ip": "198.51.100.7",
		});
		expect(elsewhere.status).toBe(401);
	});

	it("a client trying a new apikey each time is limited per address (real limiter, small limit)", async () => {
		const valid = await createApp();
		const small = { ...env, FAILED_AUTH_IP_LIMITER: env.TEST_SMALL_LIMITER } as Env;
		const attempt = async (apikey: string, ip: string, privatekey = "x") => {
			const ctx = createExecutionContext();
			const res = await worker.fetch(
				new Request("http://service.test/saas/v1_0/getcampaigndata", {
					method: "POST",
					headers: { "content-type": "application/json", "cf-connecting-ip": ip },
					body: JSON.stringify({ apikey, privatekey, campaignid: valid.campaignid }),
				}),
				small,
				ctx,
			);
			await waitOnExecutionContext(ctx);
			return res.status;
		};
		const statuses = await inOneWindow(async (round) => {
			const seen: number[] = [];
			for (let i = 0; i < 6; i++) seen.push(await attempt(`ak_guess_${round}_${i}`, `192.0.2.${50 + round}`));
			return seen;
		});
		expect(statuses).toEqual([...Array(5).fill(401), 429]);
		// Valid calls are never counted as failures, and other addresses are not limited.
		expect(await attempt(valid.apikey, "192.0.2.200", valid.privatekey)).toBe(200);
		expect(await attempt("ak_guess_other", "192.0.2.201")).toBe(401);
	});

	it("an app over its request limit gets 429 (real limiter, small limit); another app is served", async () => {
		const flooding = await createApp();
		const calm = await createApp();
		const small = { ...env, APP_RATE_LIMITER: env.TEST_SMALL_LIMITER } as Env;
		const send = async (creds: { apikey: string; privatekey: string }, campaignid: number) => {
			const ctx = createExecutionContext();
			const res = await worker.fetch(
				new Request("http://service.test/saas/v1_0/campaignterms", {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ ...creds, campaignid }),
				}),
				small,
				ctx,
			);
			await waitOnExecutionContext(ctx);
			return res;
		};
		const statuses = await inOneWindow(async () => {
			const seen: number[] = [];
			for (let i = 0; i < 6; i++) seen.push((await send(flooding, flooding.campaignid)).status);
			return seen;
		});
		expect(statuses.slice(-1)).toEqual([429]);
		expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(5 - (statuses.length - 6));
		expect((await send(calm, calm.campaignid)).status).toBe(200);
	});
});

describe("webhook URL policy (admin)", () => {
	const refused = [
		"http://hooks.example.com/x",
		"https://user:pass@hooks.example.com/x",
		"https://169.254.169.254/latest/meta-data/",
		"https://[fd00:ec2::254]/",
		"https://10.1.2.3/hook",
		"https://192.168.0.10/hook",
		"https://[fe80::1]/hook",
		"http://service.test/admin/v1/apps",
		"https://metadata.google.internal/computeMetadata/v1/",
	];
	it.each(refused)("refuses %s on create and on PATCH, naming webhookurl", async (webhookurl) => {
		expect(await admin("POST", "/apps", { name: "x", webhookurl })).toMatchObject({
			status: 400,
			body: { errorcode: "validation_failed", fields: ["webhookurl"] },
		});
		const { appid } = await createApp();
		expect(await admin("PATCH", `/apps/${appid}`, { webhookurl })).toMatchObject({ status: 400, body: { fields: ["webhookurl"] } });
	});
	it("refuses loopback without ALLOW_LOOPBACK_WEBHOOKS, allows it with", async () => {
		const ctx = createExecutionContext();
		const res = await worker.fetch(
			new Request("http://service.test/admin/v1/apps", {
				method: "POST",
				headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
				body: JSON.stringify({ name: "x", webhookurl: "http://127.0.0.1:9/hook" }),
			}),
			{ ...env, ALLOW_LOOPBACK_WEBHOOKS: "" },
			ctx,
		);
		expect(res.status).toBe(400);
		expect((await admin("POST", "/apps", { name: "x", webhookurl: "http://127.0.0.1:9/hook" })).status).toBe(201);
	});
});
