import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../support/api";

const emails = async (appid: string, type: string) =>
	(
		await env.DB.prepare("SELECT eventid, payload FROM outbox_events WHERE appid = ? AND type = ? ORDER BY created_at")
			.bind(appid, type)
			.all<{ eventid: string; payload: string }>()
	).results.map((r) => ({ eventid: r.eventid, ...JSON.parse(r.payload) }));

async function waitForDelivery(eventid: string) {
	for (let i = 0; i < 50; i++) {
		const row = await env.DB.prepare("SELECT delivered_at FROM outbox_events WHERE eventid = ?")
			.bind(eventid)
			.first<{ delivered_at: string | null }>();
		if (row?.delivered_at) return row.delivered_at;
		await new Promise((r) => setTimeout(r, 100));
	}
	return null;
}

describe("invokeoutreach", () => {
	it("creates a new user from emailId and queues the outreach email with the offer, link, code and Mail message", async () => {
		const { api, appid } = await createApp();
		const res = await api("invokeoutreach", {
			EmailId: "new@x.com",
			AppUserName: "Nia+%3CN%3E",
			Phone: "555",
			UserIdInstore: "acct-9",
			city: "Oslo",
		});
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ success: true, statuscode: 1, isExistingUser: false, hasReferrer: false });
		expect(Object.keys(res.body).sort()).toEqual(
			["success", "message", "statuscode", "userkey", "shareurl", "referralcode", "isExistingUser", "hasReferrer"].sort(),
		);
		const [email] = await emails(appid, "email.outreach");
		expect(email).toMatchObject({ to: "new@x.com", toName: "Nia <N>", subject: "Give $10 & get $10!" });
		expect(email.text).toContain(`Join me: ${res.body.shareurl} (code ${res.body.referralcode})`);
		expect(email.text).toContain("Invite friends: 100% of them get $10.");
		expect(email.html).toContain("Hi Nia &lt;N&gt;,");
		expect(email.html).not.toContain("<N>");
		expect(email.html).toContain(`href="${res.body.shareurl}"`);
		// The real queue delivers it through the consumer and the send_email binding.
		expect(await waitForDelivery(email.eventid)).not.toBeNull();
	});

	it("finds an existing user by userkey, emailId or UserIdInstore", async () => {
		const { api } = await createApp();
		const user = (await api("register", { email: "old@x.com", useraccountid: "A7" })).body;
		for (const by of [{ userkey: user.userkey }, { emailId: "old@x.com" }, { UserIdInstore: "A7" }]) {
			const res = await api("invokeoutreach", by);
			expect(res.body).toMatchObject({ userkey: user.userkey, isExistingUser: true, referralcode: user.referralcode });
		}
	});

	it("needs one identifier, a known userkey, and a user with an email", async () => {
		const { api } = await createApp();
		const none = await api("invokeoutreach", { AppUserName: "x" });
		expect(none.status).toBe(400);
		expect(none.body.errorcode).toBe("validation_failed");
		const unknown = await api("invokeoutreach", { userkey: "u0000000000000000000" });
		expect(unknown.status).toBe(404);
		expect(unknown.body.statuscode).toBe(2);
		const noEmail = await api("invokeoutreach", { UserIdInstore: "only-account" });
		expect(noEmail.status).toBe(409);
		expect(noEmail.body.errorcode).toBe("user_has_no_email");
		// A refused call leaves nothing: the user was not created on the way to the refusal.
		const created = await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE useraccountid = 'only-account'").first();
		expect(created).toEqual({ n: 0 });
	});
});

describe("remindfriend", () => {
	async function setup() {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "ref@x.com", name: "Rita" })).body;
		const friend = (await app.api("register", { email: "fr@x.com", name: "Fred", referrercode: referrer.referralcode })).body;
		const stranger = (await app.api("register", { email: "st@x.com" })).body;
		return { ...app, referrer, friend, stranger };
	}

	it("queues a reminder with the referrer's message to a friend", async () => {
		const { api, appid } = await setup();
		const res = await api("remindfriend", { email: "ref@x.com", friendemail: "fr@x.com", messageforfriend: "Don%27t+miss+it" });
		expect(res.status).toBe(200);
		const [email] = await emails(appid, "email.reminder");
		expect(email).toMatchObject({ to: "fr@x.com", toName: "Fred" });
		expect(email.subject).toContain("Rita");
		expect(email.text).toContain("Rita says: Don't miss it");
		expect(email.html).toContain("Don&#39;t miss it");
	});

	it("allows one reminder per friend per 24 h, also under concurrent calls", async () => {
		const { api, appid, referrer, friend } = await setup();
		const results = await Promise.all(
			Array.from({ length: 5 }, () => api("remindfriend", { userkey: referrer.userkey, frienduserkey: friend.userkey })),
		);
		expect(results.filter((r) => r.status === 200)).toHaveLength(1);
		expect(results.filter((r) => r.status === 429).every((r) => r.body.errorcode === "rate_limited")).toBe(true);
		expect(await emails(appid, "email.reminder")).toHaveLength(1);
	});

	it("refuses a user who is not this referrer's friend, and requires both identifiers", async () => {
		const { api, appid, referrer, stranger, friend } = await setup();
		const res = await api("remindfriend", { userkey: referrer.userkey, frienduserkey: stranger.userkey });
		expect(res.status).toBe(404);
		expect(res.body.errorcode).toBe("not_a_friend");
		// The friend cannot remind its referrer either.
		expect((await api("remindfriend", { userkey: friend.userkey, frienduserkey: referrer.userkey })).status).toBe(404);
		expect((await api("remindfriend", { userkey: referrer.userkey })).status).toBe(400);
		expect((await api("remindfriend", { frienduserkey: friend.userkey })).status).toBe(400);
		expect(await emails(appid, "email.reminder")).toHaveLength(0);
	});

	it("refuses a friend without an email", async () => {
		const { api, referrer } = await setup();
		const quiet = (await api("register", { useraccountid: "no-mail", referrercode: referrer.referralcode })).body;
		const res = await api("remindfriend", { userkey: referrer.userkey, frienduserkey: quiet.userkey });
		expect(res.status).toBe(409);
		expect(res.body.errorcode).toBe("friend_has_no_email");
	});
});
