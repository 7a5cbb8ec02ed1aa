import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";

async function setup() {
	const app = await createApp();
	const ann = (await app.api("register", { email: `ann-${crypto.randomUUID()}@x.com`, name: "Ann" })).body;
	return { ...app, ann };
}

const codeOf = async (appid: string, userkey: string) =>
	(
		await env.DB.prepare("SELECT referralcode FROM users WHERE appid = ? AND userkey = ?")
			.bind(appid, userkey)
			.first<{ referralcode: string }>()
	)?.referralcode;

describe("vanity codes (updateuser referralcode)", () => {
	it("sets a vanity code; the old code stays an alias for applyreferrercode, register and share links", async () => {
		const { api, appid, ann } = await setup();
		const vanity = `Ann-${crypto.randomUUID().slice(0, 8)}`;
		const res = await api("updateuser", { userkey: ann.userkey, referralcode: vanity });
		expect(res.body, JSON.stringify(res.body)).toMatchObject({ success: true });
		expect(await codeOf(appid, ann.userkey)).toBe(vanity.toUpperCase());

		// The new code, in any case, and the old one both attribute a friend to Ann.
		const bob = (await api("register", { email: "bob@x.com" })).body;
		const applied = await api("applyreferrercode", { userkey: bob.userkey, referrercode: vanity.toLowerCase() });
		expect(applied.body.success).toBe(true);
		const cat = (await api("register", { email: "cat@x.com", referrercode: ann.referralcode })).body;
		const dan = (await api("register", { email: "dan@x.com" })).body;
		expect((await api("applyreferrercode", { userkey: dan.userkey, referrercode: ann.referralcode })).body.success).toBe(true);
		const referrers = await env.DB.prepare(
			"SELECT f.userkey, r.userkey AS referrer FROM users f JOIN users r ON r.userid = f.referrer_userid WHERE f.appid = ? ORDER BY f.userid",
		)
			.bind(appid)
			.all<{ userkey: string; referrer: string }>();
		expect(referrers.results).toEqual([
			{ userkey: bob.userkey, referrer: ann.userkey },
			{ userkey: cat.userkey, referrer: ann.userkey },
			{ userkey: dan.userkey, referrer: ann.userkey },
		]);

		// A printed link with the old code leads to the landing page with the current code, counted under it.
		const link = await request(`/r/${ann.referralcode}`, { redirect: "manual" });
		expect(link.status).toBe(302);
		expect(new URL(link.headers.get("location") ?? "").searchParams.get("referrercode")).toBe(vanity.toUpperCase());
		// Counted by the click counters, rolled up into D1 later (issue 33): both codes' counters flushed now.
		await flushClicks(ann.referralcode, vanity);
		const clicks = await env.DB.prepare("SELECT referralcode, clicks FROM link_clicks WHERE referralcode IN (?, ?)")
			.bind(ann.referralcode, vanity.toUpperCase())
			.all();
		expect(clicks.results).toEqual([{ referralcode: vanity.toUpperCase(), clicks: 1 }]);
	});

	it("refuses a code another user has, as its code or as an alias, ignoring case: 409 referralcode_taken, nothing changed", async () => {
		const { api, appid, ann } = await setup();
		const ben = (await api("register", { email: `ben-${crypto.randomUUID()}@x.com`, name: "Ben" })).body;
		const taken = await api("updateuser", { userkey: ben.userkey, referralcode: ann.referralcode.toLowerCase(), name: "Benjamin" });
		expect(taken.status).toBe(409);
		expect(taken.body).toMatchObject({ success: false, errorcode: "referralcode_taken", fields: ["referralcode"] });
		const vanity = `ann${crypto.randomUUID().slice(0, 8)}`;
		expect((await api("updateuser", { userkey: ann.userkey, referralcode: vanity })).body.success).toBe(true);
		// Ann's old code is her alias now: still taken for Ben.
		const alias = await api("updateuser", { userkey: ben.userkey, referralcode: ann.referralcode });
		expect(alias.status).toBe(409);
		expect(await codeOf(appid, ben.userkey)).toBe(ben.referralcode);
		const name = await env.DB.prepare("SELECT name FROM users WHERE userkey = ?").bind(ben.userkey).first();
		expect(name).toEqual({ name: "Ben" });
		// Another app's user cannot take it either: share links name a code without its app.
		const other = await createApp();
		const eve = (await other.api("register", { email: "eve@x.com" })).body;
		expect((await other.api("updateuser", { userkey: eve.userkey, referralcode: vanity.toUpperCase() })).status).toBe(409);
		// Ann may take her own old code back; it is her code again, not an alias.
		expect((await api("updateuser", { userkey: ann.userkey, referralcode: ann.referralcode })).body.success).toBe(true);
		expect(await codeOf(appid, ann.userkey)).toBe(ann.referralcode);
		const aliases = await env.DB.prepare("SELECT code FROM referral_code_aliases WHERE appid = ?").bind(appid).all();
		expect(aliases.results).toEqual([{ code: vanity.toUpperCase() }]);
	});

	it("refuses a malformed code with 400 naming the field", async () => {
		const { api, ann } = await setup();
		for (const referralcode of ["ab", "x".repeat(33), "has space", "é-code"]) {
			const res = await api("updateuser", { userkey: ann.userkey, referralcode });
			expect(res.status, referralcode).toBe(400);
			expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: ["referralcode"] });
		}
	});
});
