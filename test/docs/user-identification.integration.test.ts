import { describe, expect, it } from "vitest";
import { call, createApp, request } from "../support/api";

/**
 * Issue 47: docs/api.md and the behaviour agree on where `email` stands in for
 * `userkey`. The contract marks `userkey` required on the operations that name
 * a user, except invokeoutreach and remindfriend (decisions.md): the docs list
 * those two on one line, and every operation taking both fields is called with
 * an existing user's `email` and no `userkey`: found on the listed ones, 400
 * naming `userkey` on the others.
 */
const API_DOC = import.meta.glob<string>("../../docs/api.md", { query: "?raw", import: "default", eager: true })["../../docs/api.md"] ?? "";

/** What else each operation needs besides the user (the friend, a code, an amount). */
type Ctx = { campaignid: number; friend: string; code: string };
const EXTRA: Record<string, (ctx: Ctx) => Record<string, unknown>> = {
	getuserbalance: ({ campaignid }) => ({ campaignid }),
	getfriendsandrewards: () => ({}),
	registerconversionevent: () => ({ eventname: "Signup", customid: `email-only-${crypto.randomUUID()}`, growthhack: "SaaS_Referrals" }),
	applyreferrercode: ({ code }) => ({ referrercode: code }),
	redeemrewards: () => ({ amount: "1" }),
	getsharepage: () => ({}),
	invokeoutreach: () => ({}),
	remindfriend: ({ friend }) => ({ frienduserkey: friend }),
};

describe("docs/api.md: where email stands in for userkey", () => {
	it("lists exactly the operations that find a user by email without a userkey", async () => {
		const listed = /^Email in place of userkey: (.+)\.$/m.exec(API_DOC)?.[1];
		expect(listed, "docs/api.md has the line 'Email in place of userkey: `a`, `b`.'").toBeDefined();
		const inPlace = new Set([...(listed ?? "").matchAll(/`(\w+)`/g)].map((m) => m[1]));

		const doc = (await (await request("/openapi.json")).json()) as any;
		const resolve = (s: any): any => (s?.$ref ? resolve(doc.components.schemas[s.$ref.split("/").pop()]) : s);
		// Every operation whose request has both fields, but register and updateuser, where `email` is the user's new profile.
		const naming = Object.entries(doc.paths as Record<string, any>)
			.filter(([path]) => path.startsWith("/saas/v1_0/"))
			.map(([path, item]) => [path.slice("/saas/v1_0/".length), resolve(item.post.requestBody.content["application/json"].schema)])
			.filter(([name, schema]) => schema.properties?.userkey && schema.properties?.email && !["register", "updateuser"].includes(name))
			.map(([name]) => String(name))
			.sort();
		expect(naming).toEqual(Object.keys(EXTRA).sort());

		const app = await createApp();
		const keys = { apikey: app.apikey, privatekey: app.privatekey };
		const referrer = (await app.api("register", { email: "email-ref@example.com", name: "Ref" })).body;
		const friend = (await app.api("register", { email: "email-friend@example.com", referrercode: referrer.referralcode })).body;
		await app.api("register", { email: "email-late@example.com" });
		const ctx = { campaignid: app.campaignid, friend: friend.userkey, code: referrer.referralcode };
		for (const name of naming) {
			const email = name === "applyreferrercode" ? "email-late@example.com" : "email-ref@example.com";
			const answer = await call(name, { ...keys, email, ...EXTRA[name]?.(ctx) });
			if (inPlace.has(name)) expect([name, answer.status], JSON.stringify(answer.body)).toEqual([name, 200]);
			else
				expect([name, answer.status, answer.body.errorcode, answer.body.fields], JSON.stringify(answer.body)).toEqual([
					name,
					400,
					"validation_failed",
					["userkey"],
				]);
		}
	});
});
