import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";
import { conversion, flushLedger, follow, newCustomId, registerUser, signIn, type TestApp } from "../support/dashboard";

/** A referrer and a friend sharing a phone number: both Signup rewards are Suspicious (same_phone). */
async function suspiciousReferral(app: TestApp, tag: string) {
	const phone = `+1555${Math.floor(Math.random() * 1e7)}`;
	const ref = await registerUser(app, { email: `ref-${tag}@x.com`, name: `Rita ${tag}`, phone });
	const friend = await registerUser(app, { email: `friend-${tag}@x.com`, name: `Fred ${tag}`, phone, referrercode: ref.referralcode });
	await conversion(app, friend.userkey);
	await Promise.all([flushLedger(app, ref.userkey), flushLedger(app, friend.userkey)]);
	const { rewards } = (await admin("GET", `/apps/${app.appid}/rewards?status=Suspicious`)).body;
	const ids = rewards
		.filter((r: { userkey: string }) => r.userkey === ref.userkey || r.userkey === friend.userkey)
		.map((r: { rewarddtlid: string }) => r.rewarddtlid);
	expect(ids).toHaveLength(2);
	return { ref, friend, ids: ids as string[] };
}

const listed = (html: string, id: string) => html.includes(`data-reward="${id}"`);

describe("review queue", { timeout: 60_000 }, () => {
	it("shows friend and referrer by email and name, the event, the amount and the fraud signals", async () => {
		const session = await signIn();
		const app = await createApp();
		const { ids } = await suspiciousReferral(app, "show");
		const html = await (await session.get(`/dashboard/apps/${app.appid}/review`)).text();
		for (const id of ids) expect(listed(html, id)).toBe(true);
		for (const text of ["friend-show@x.com", "Fred show", "ref-show@x.com", "Rita show", "Signup", "10.00 USD", "same_phone"]) {
			expect(html).toContain(text);
		}
		expect(html).toContain("share a phone number");
		const admins = (await admin("GET", `/apps/${app.appid}/rewards?status=Suspicious`)).body.rewards;
		expect(admins.find((r: { usertype: string }) => r.usertype === "Friend")).toMatchObject({
			friend: { email: "friend-show@x.com", name: "Fred show" },
			referrer: { email: "ref-show@x.com", name: "Rita show" },
			fraudsignals: ["same_phone"],
		});
	});

	it("redirects after a bulk action to a queue that no longer lists what was decided", async () => {
		const session = await signIn();
		const app = await createApp();
		const first = await suspiciousReferral(app, "a");
		const second = await suspiciousReferral(app, "b");
		const rejected = await follow(
			session,
			await session.post(`/dashboard/apps/${app.appid}/review`, { ids: first.ids, action: "Rejected" }),
		);
		expect(rejected.url.searchParams.get("ok")).toBe("Rejected 2 reward(s).");
		for (const id of first.ids) expect(listed(rejected.html, id), id).toBe(false);
		for (const id of second.ids) expect(listed(rejected.html, id), id).toBe(true);
		const approved = await follow(
			session,
			await session.post(`/dashboard/apps/${app.appid}/review`, { ids: second.ids, action: "Approved" }),
		);
		expect(approved.url.searchParams.get("ok")).toBe("Approved 2 reward(s).");
		for (const id of second.ids) expect(listed(approved.html, id), id).toBe(false);
		const statuses = (await admin("GET", `/apps/${app.appid}/rewards`)).body.rewards.map((r: Record<string, string>) => [
			r.rewarddtlid,
			r.rewardstatus,
		]);
		expect(Object.fromEntries(statuses)).toMatchObject({
			[first.ids[0] as string]: "Rejected",
			[first.ids[1] as string]: "Rejected",
			[second.ids[0] as string]: "Approved",
			[second.ids[1] as string]: "Approved",
		});
	});

	it("shows what a user owes after a refund of spent rewards on the user page", async () => {
		const session = await signIn();
		const app = await createApp({
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" }],
		});
		const ref = await registerUser(app, { email: "owes@x.com" });
		const friend = await registerUser(app, { email: "buyer@x.com", referrercode: ref.referralcode });
		const customid = newCustomId();
		await conversion(app, friend.userkey, "Purchase", { customid, transactionvalue: "50" });
		expect((await app.api("redeemrewards", { userkey: ref.userkey, amount: "10" })).status).toBe(200);
		expect((await app.api("reverseconversionevent", { customid, reason: "refund" })).status).toBe(200);
		const html = await (await session.get(`/dashboard/apps/${app.appid}/users/${ref.userkey}`)).text();
		expect(html).toContain("Owed (clawbacks)");
		expect(/data-testid="owed">([^<]+)</.exec(html)?.[1]).toBe("10.00 USD");
	});
});
