import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";

/**
 * Errors that say what was expected (issue 24 item 7): every 400 names each
 * failing field and what it needs, in the message and in `errors`; unknown
 * fields are listed in `warnings`, never refused.
 */
describe("validation errors and warnings", () => {
	it("names every failing field and what it needs, never a bare 'Invalid input'", async () => {
		const app = await createApp();
		const res = await app.api("registerconversionevent", { eventname: "Signup", customid: "1", transactionvalue: true });
		expect(res.status).toBe(400);
		expect(res.body.fields).toEqual(expect.arrayContaining(["userkey", "transactionvalue", "growthhack"]));
		expect(res.body.errors).toEqual(
			expect.arrayContaining([
				{ field: "userkey", message: "is required" },
				{ field: "growthhack", message: "is required" },
			]),
		);
		const value = res.body.errors.find((e: { field: string }) => e.field === "transactionvalue");
		expect(value.message).not.toMatch(/^Invalid input$/);
		expect(value.message).toBe(`must be a decimal number such as 19.99, or the same as text such as "19.99" (got boolean)`);
		expect(res.body.message).not.toMatch(/Invalid input(;|$)/);
	});

	it("a 400 raised by an operation's own check carries errors too; so does the admin API", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "r@x.com" })).body;
		const redeem = await app.api("redeemrewards", { userkey: referrer.userkey });
		expect(redeem.status).toBe(400);
		expect(redeem.body.errors).toEqual([expect.objectContaining({ field: redeem.body.fields[0] })]);
		const bad = await admin("PATCH", `/apps/${app.appid}`, { defaultcampaignid: 999_999 });
		expect(bad.body.errors).toEqual([{ field: "defaultcampaignid", message: expect.stringContaining("not a campaign of app") }]);
	});

	it("unknown fields are ignored and listed in warnings; known ones in any spelling are not", async () => {
		const app = await createApp();
		const res = await app.api("register", { email: "w@x.com", emial: "typo@x.com", UserIdInstore: "7", AppUserName: "W" });
		expect(res.status).toBe(200);
		expect(res.body.warnings).toEqual([{ field: "emial", message: "unknown field: ignored" }]);
		const clean = await app.api("register", { email: "v@x.com" });
		expect(clean.body.warnings).toBeUndefined();
	});
});
