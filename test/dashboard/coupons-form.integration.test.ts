import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";
import { signIn } from "../support/dashboard";

/**
 * The campaign page's coupon form keeps what was typed (issue 48, "No form
 * loses input"): a refused paste comes back in the box as typed, the box
 * marked and described by a message in the operator's words (which code,
 * what is wrong with it), and nothing is added to the pool.
 */

const poolOf = async (appid: string, campaignid: number) =>
	(await admin<{ couponsavailable: number }>("GET", `/apps/${appid}/campaigns/${campaignid}`)).body.couponsavailable;

/** The textarea's content as the page draws it (HTML-escaped as Hono escapes it). */
const boxOf = (html: string) => /<textarea id="f-codes"[^>]*>([\s\S]*?)<\/textarea>/.exec(html);

describe("the coupon form after a refusal", () => {
	it("keeps the pasted codes and names the code that is too long, at the box; nothing added", async () => {
		const app = await createApp({ rewardrules: [{ rewardusertype: "Friend", eventname: "Signup", reward: 1, rewardunit: "Coupon" }] });
		const session = await signIn();
		const long = `LONG${"X".repeat(200)}`;
		const typed = `SPRING-10\n${long}\nSPRING-20`;
		const res = await session.post(`/dashboard/apps/${app.appid}/campaigns/${app.campaignid}/coupons`, { codes: typed });
		expect(res.status).toBe(400);
		const html = await res.text();
		const box = boxOf(html);
		expect(box?.[0]).toContain('aria-invalid="true"');
		expect(box?.[0]).toContain('aria-describedby="f-codes-error"');
		expect(box?.[1]).toBe(typed);
		const error = /<p id="f-codes-error" class="field-error">([^<]*)<\/p>/.exec(html)?.[1] ?? "";
		expect(error).toContain("Code 2 (LONGXXXXXXXX");
		expect(error).toContain("must be at most 200 characters");
		expect(error).not.toContain("coupons.1");
		expect(await poolOf(app.appid, app.campaignid)).toBe(0);
	});

	it("says at the box that codes are needed when none were given", async () => {
		const app = await createApp();
		const session = await signIn();
		const res = await session.post(`/dashboard/apps/${app.appid}/campaigns/${app.campaignid}/coupons`, { codes: "  \n " });
		expect(res.status).toBe(400);
		const html = await res.text();
		expect(boxOf(html)?.[0]).toContain('aria-invalid="true"');
		expect(html).toMatch(/<p id="f-codes-error" class="field-error">Paste codes \(one per line\) or choose a CSV file\.<\/p>/);
	});
});
