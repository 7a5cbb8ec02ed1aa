import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";
import { until } from "../support/until";

/**
 * Line breaks are LF (issue 24 item 3): CRLF and CR, what browsers send from
 * a textarea, become LF on every text input of both APIs before validation;
 * a single-line field still refuses a line break of any kind.
 */
describe("CRLF and CR become LF", () => {
	it("public API: free text keeps its lines as LF; a name with a line break is still refused", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "r@x.com" })).body;
		const friend = (await app.api("register", { email: "f@x.com", referrercode: referrer.referralcode })).body;
		const event = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "1",
			growthhack: "SaaS_Referrals",
			extrainfo: "line one\r\nline two\rline three",
		});
		expect(event.status).toBe(200);
		// D1's row of the event follows the projection (issue 49).
		const stored = await until(
			"the event in D1",
			() => env.DB.prepare("SELECT extrainfo FROM conversion_events WHERE appid = ?").bind(app.appid).first(),
			(row) => row !== null,
		);
		expect(stored).toEqual({ extrainfo: "line one\nline two\nline three" });
		const named = await app.api("updateuser", { userkey: friend.userkey, AppUserName: "A\r\nB" });
		expect(named.status).toBe(400);
		expect(named.body.fields).toEqual(["name"]);
	});

	it("admin API (and so the dashboard): campaign terms and descriptions are stored with LF; a one-line name still refuses a break", async () => {
		const app = await createApp({ terms: "First line\r\nSecond line", rewardrules: [] });
		const campaign = (await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body;
		expect(campaign.terms).toBe("First line\nSecond line");
		const patched = await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { offerdescription: "a\rb" });
		expect(patched.status).toBe(200);
		expect(patched.body.offerdescription).toBe("a\nb");
		expect((await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { campaignname: "x\r\ny" })).status).toBe(400);
	});
});
