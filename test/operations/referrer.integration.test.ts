import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp, request, withWebhook } from "../support/api";
import { flushClicks } from "../support/clicks";

const userRow = (userkey: string) => env.DB.prepare("SELECT * FROM users WHERE userkey = ?").bind(userkey).first<Record<string, any>>();

async function setup() {
	const app = await createApp({}, withWebhook());
	const reg = async (email: string, extra: Record<string, unknown> = {}) => (await app.api("register", { email, ...extra })).body;
	return { ...app, reg };
}

describe("applyreferrercode", () => {
	it("sets the referrer once and counts the friend", async () => {
		const { api, reg, appid } = await setup();
		const a = await reg("a@x.com");
		const b = await reg("b@x.com");
		const res = await api("applyreferrercode", { userkey: b.userkey, referrercode: a.referralcode });
		expect(res.status).toBe(200);
		expect(res.body.success).toBe(true);
		expect((await userRow(b.userkey))?.referrer_userid).toBe((await userRow(a.userkey))?.userid);
		expect((await userRow(a.userkey))?.friends_count).toBe(1);
		const types = await env.DB.prepare("SELECT type FROM outbox_events WHERE appid = ?").bind(appid).all<{ type: string }>();
		expect(types.results.map((r) => r.type)).toContain("referral.attributed");
	});

	it("refuses with distinct errorcodes, leaving the user unchanged", async () => {
		const { api, reg } = await setup();
		const a = await reg("a@x.com");
		const b = await reg("b@x.com", { referrercode: a.referralcode });
		const c = await reg("c@x.com", { referrercode: b.referralcode });
		const d = await reg("d@x.com");
		const cases: [string, string, number, string][] = [
			[d.userkey, "NOPE2345", 404, "referrer_code_not_found"],
			[d.userkey, d.referralcode, 400, "own_referrer_code"],
			[a.userkey, b.referralcode, 409, "referral_cycle"], // A refers B; B cannot refer A
			[a.userkey, c.referralcode, 409, "referral_cycle"], // A -> B -> C; C cannot refer A
			[c.userkey, d.referralcode, 409, "referrer_already_set"],
		];
		for (const [userkey, referrercode, status, errorcode] of cases) {
			const before = await userRow(userkey);
			const res = await api("applyreferrercode", { userkey, referrercode });
			expect(res.status, errorcode).toBe(status);
			expect(res.body).toMatchObject({ success: false, errorcode });
			expect(await userRow(userkey)).toEqual(before);
		}
		expect((await userRow(d.userkey))?.friends_count).toBe(0);
	});

	it("lets exactly one of two concurrent opposite attributions win (no cycle)", async () => {
		const { api, reg } = await setup();
		const a = await reg("a@x.com");
		const b = await reg("b@x.com");
		const results = await Promise.all([
			api("applyreferrercode", { userkey: a.userkey, referrercode: b.referralcode }),
			api("applyreferrercode", { userkey: b.userkey, referrercode: a.referralcode }),
		]);
		expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
		const rows = [await userRow(a.userkey), await userRow(b.userkey)];
		expect(rows.filter((r) => r?.referrer_userid !== null)).toHaveLength(1);
	});

	it("counts one friend when the same attribution is sent 10 times at once", async () => {
		const { api, reg } = await setup();
		const a = await reg("a@x.com");
		const b = await reg("b@x.com");
		const results = await Promise.all(
			Array.from({ length: 10 }, () => api("applyreferrercode", { userkey: b.userkey, referrercode: a.referralcode })),
		);
		expect(results.filter((r) => r.status === 200)).toHaveLength(1);
		expect((await userRow(a.userkey))?.friends_count).toBe(1);
	});

	it("is 404 for another app's user or code", async () => {
		const mine = await setup();
		const theirs = await setup();
		const m = await mine.reg("m@x.com");
		const t = await theirs.reg("t@x.com");
		expect((await mine.api("applyreferrercode", { userkey: t.userkey, referrercode: m.referralcode })).body.errorcode).toBe(
			"user_not_found",
		);
		expect((await mine.api("applyreferrercode", { userkey: m.userkey, referrercode: t.referralcode })).body.errorcode).toBe(
			"referrer_code_not_found",
		);
	});

	it("requires userkey and referrercode", async () => {
		const { api } = await setup();
		const res = await api("applyreferrercode", {});
		expect(res.status).toBe(400);
		expect(res.body.fields.sort()).toEqual(["referrercode", "userkey"]);
	});
});

describe("validatereferrercode", () => {
	it("answers success with the referrer's name for a code of this app, 404 otherwise", async () => {
		const mine = await setup();
		const theirs = await setup();
		const r = await mine.reg("r@x.com", { name: "Rita" });
		const ok = await mine.api("validatereferrercode", { referrercode: r.referralcode });
		expect(ok.status).toBe(200);
		expect(ok.body).toMatchObject({ success: true, name: "Rita", referrercode: r.referralcode });
		expect(ok.body).not.toHaveProperty("userkey");
		const foreign = await theirs.api("validatereferrercode", { referrercode: r.referralcode });
		expect(foreign.status).toBe(404);
		expect(foreign.body.errorcode).toBe("referrer_code_not_found");
	});
});

describe("share links", () => {
	it("counts a click per code and day and redirects to the landing URL with referrercode, keeping its query", async () => {
		const { reg } = await setup();
		const r = await reg("r@x.com");
		for (let i = 0; i < 2; i++) {
			const res = await request(`/r/${r.referralcode}`, { redirect: "manual" });
			expect(res.status).toBe(302);
			const location = new URL(res.headers.get("location") ?? "");
			expect(location.origin + location.pathname).toBe("https://shop.example.com/join");
			expect(location.searchParams.get("src")).toBe("ref");
			expect(location.searchParams.get("referrercode")).toBe(r.referralcode);
		}
		await flushClicks(r.referralcode);
		const clicks = await env.DB.prepare("SELECT clicks FROM link_clicks WHERE referralcode = ?")
			.bind(r.referralcode)
			.first<{ clicks: number }>();
		expect(clicks?.clicks).toBe(2);
	});

	it("sends an unknown code on a custom domain to the app's landing URL without a code, and is a plain 404 elsewhere", async () => {
		const { appid, campaignid } = await setup();
		await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, { customdomain: "refer.shop.example.com" });
		const onDomain = await request("/r/UNKNOWN2", { redirect: "manual", headers: {} });
		expect(onDomain.status).toBe(404);
		expect(onDomain.headers.get("content-type")).toMatch(/text\/plain/);
		const viaDomain = await fetchOnHost("refer.shop.example.com", "/r/UNKNOWN2");
		expect(viaDomain.status).toBe(302);
		expect(viaDomain.headers.get("location")).toBe("https://shop.example.com/join?src=ref");
		expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM link_clicks WHERE referralcode = 'UNKNOWN2'").first<{ n: number }>()).toEqual({
			n: 0,
		});
	});

	it("is a plain 404 for a known code when the app has no landing URL", async () => {
		const app = await createApp({}, { landingurl: null });
		const r = await app.api("register", { email: "z@x.com" });
		const res = await request(`/r/${r.body.referralcode}`, { redirect: "manual" });
		expect(res.status).toBe(404);
	});
});

async function fetchOnHost(host: string, path: string) {
	const { exports } = await import("cloudflare:workers");
	return exports.default.fetch(new Request(`https://${host}${path}`, { redirect: "manual" }));
}
