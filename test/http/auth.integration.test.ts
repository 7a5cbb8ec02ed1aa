import { describe, expect, it } from "vitest";
import { admin, call, createApp } from "../support/api";

describe("app authentication", () => {
	it("accepts the app's apikey and privatekey", async () => {
		const { apikey, privatekey, campaignid } = await createApp();
		expect((await call("campaignterms", { apikey, privatekey, campaignid })).status).toBe(200);
	});

	const missing: [string, Record<string, unknown>][] = [
		["no credentials", {}],
		["no privatekey", { apikey: "ak_x" }],
		["no apikey", { privatekey: "pk_x" }],
		["empty strings", { apikey: "", privatekey: "" }],
		["non-string credentials", { apikey: 12, privatekey: true }],
	];
	for (const [what, creds] of missing) {
		it(`is 401 missing_credentials with ${what}`, async () => {
			const { status, body } = await call("campaignterms", { ...creds, campaignid: "1" });
			expect(status).toBe(401);
			expect(body).toMatchObject({ success: false, errorcode: "missing_credentials" });
		});
	}

	it("is 401 invalid_credentials for a wrong privatekey, an unknown apikey, and another app's privatekey", async () => {
		const mine = await createApp();
		const theirs = await createApp();
		for (const creds of [
			{ apikey: mine.apikey, privatekey: `${mine.privatekey}x` },
			{ apikey: "ak_doesnotexist", privatekey: mine.privatekey },
			{ apikey: mine.apikey, privatekey: theirs.privatekey },
		]) {
			const { status, body } = await call("campaignterms", { ...creds, campaignid: mine.campaignid });
			expect(status).toBe(401);
			expect(body).toMatchObject({ success: false, errorcode: "invalid_credentials" });
		}
	});

	it("checks credentials before validating the operation's fields", async () => {
		const { status, body } = await call("getcampaigndata", { apikey: "ak_nope", privatekey: "pk_nope" });
		expect(status).toBe(401);
		expect(body.errorcode).toBe("invalid_credentials");
	});

	it("stops accepting a private key once it is rotated", async () => {
		const { appid, apikey, privatekey, campaignid } = await createApp();
		const rotated = await admin<{ privatekey: string }>("POST", `/apps/${appid}/rotate-privatekey`);
		expect(rotated.status).toBe(200);
		expect(rotated.body.privatekey).not.toBe(privatekey);
		expect((await call("campaignterms", { apikey, privatekey, campaignid })).status).toBe(401);
		expect((await call("campaignterms", { apikey, privatekey: rotated.body.privatekey, campaignid })).status).toBe(200);
	});
});
