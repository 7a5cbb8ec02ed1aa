import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp, withWebhook } from "../support/api";

const userRow = (userkey: string) => env.DB.prepare("SELECT * FROM users WHERE userkey = ?").bind(userkey).first<Record<string, any>>();
const countUsers = async (appid: string) =>
	(await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE appid = ?").bind(appid).first<{ n: number }>())?.n;
const events = async (appid: string) =>
	(
		await env.DB.prepare("SELECT type, payload FROM outbox_events WHERE appid = ? ORDER BY created_at")
			.bind(appid)
			.all<{ type: string; payload: string }>()
	).results;

describe("register", () => {
	it("creates a user with every field and answers exactly the spec's fields", async () => {
		const { api, appid, campaignid } = await createApp({}, withWebhook());
		const { status, body } = await api("register", {
			email: "Jane.Doe@Example.com",
			name: "Jane+Doe",
			phone: "5551234",
			profileimage: "https://img.example.com/j.png",
			useraccountid: "acct-1",
			city: "Paris",
			state: "IDF",
			country: "FR",
			paymentcustomerid: "cus_123",
			existinguser: false,
			usertimezone: "Europe/Paris",
			extrainfo: "plan%3Dpro",
		});
		expect(status).toBe(200);
		expect(Object.keys(body).sort()).toEqual(
			[
				"success",
				"message",
				"userkey",
				"hasreferrer",
				"isexistinguser",
				"shareurl",
				"saascampaignid",
				"referralcode",
				"referrercode",
			].sort(),
		);
		expect(body).toMatchObject({
			success: true,
			hasreferrer: false,
			isexistinguser: false,
			saascampaignid: String(campaignid),
			referrercode: "",
		});
		expect(body.userkey).toMatch(/^u[0-9a-z]{19}$/);
		expect(body.referralcode).toMatch(/^[2-9A-HJKMNP-Z]{8}$/);
		expect(body.shareurl).toBe(`http://service.test/r/${body.referralcode}`);
		const row = await userRow(body.userkey);
		expect(row).toMatchObject({
			appid,
			email: "jane.doe@example.com",
			name: "Jane Doe",
			phone: "5551234",
			useraccountid: "acct-1",
			city: "Paris",
			paymentcustomerid: "cus_123",
			usertimezone: "Europe/Paris",
			extrainfo: "plan=pro",
			isexistinguser: 0,
			status: "SignUp",
		});
		expect((await events(appid)).map((e) => e.type)).toEqual(["user.registered"]);
	});

	it("accepts existinguser and isexistinguser alike", async () => {
		const { api } = await createApp();
		const a = await api("register", { email: "a@x.com", existinguser: true });
		const b = await api("register", { email: "b@x.com", isExistingUser: "true" });
		expect((await userRow(a.body.userkey))?.isexistinguser).toBe(1);
		expect((await userRow(b.body.userkey))?.isexistinguser).toBe(1);
		expect(a.body.isexistinguser).toBe(true);
	});

	it("returns the registered user for a second register with the same email or account id, changing nothing", async () => {
		const { api, appid } = await createApp();
		const first = await api("register", { email: "same@x.com", useraccountid: "A1", name: "First" });
		const byEmail = await api("register", { email: "SAME@x.com", name: "Second" });
		const byAccount = await api("register", { useraccountid: "A1", name: "Third", email: "other@x.com" });
		for (const again of [byEmail, byAccount]) {
			expect(again.status).toBe(200);
			expect(again.body).toMatchObject({ userkey: first.body.userkey, referralcode: first.body.referralcode, isexistinguser: true });
		}
		expect((await userRow(first.body.userkey))?.name).toBe("First");
		expect(await countUsers(appid)).toBe(1);
	});

	it("records no webhook event for an app without a webhook URL", async () => {
		const { api, appid } = await createApp();
		const referrer = await api("register", { email: "ref@x.com" });
		const friend = await api("register", { email: "friend@x.com", referrercode: referrer.body.referralcode });
		expect(friend.body).toMatchObject({ hasreferrer: true });
		expect(await events(appid)).toEqual([]);
	});

	it("attributes the user to the owner of referrercode", async () => {
		const { api, appid } = await createApp({}, withWebhook());
		const referrer = await api("register", { email: "ref@x.com", name: "Ref" });
		const friend = await api("register", { email: "friend@x.com", referrercode: referrer.body.referralcode.toLowerCase() });
		expect(friend.body).toMatchObject({ hasreferrer: true, referrercode: referrer.body.referralcode });
		const row = await userRow(friend.body.userkey);
		expect(row?.referrer_userid).toBe((await userRow(referrer.body.userkey))?.userid);
		expect((await userRow(referrer.body.userkey))?.friends_count).toBe(1);
		const attributed = (await events(appid)).find((e) => e.type === "referral.attributed");
		expect(JSON.parse(attributed?.payload ?? "{}")).toMatchObject({
			friend: { userkey: friend.body.userkey, email: "friend@x.com" },
			referrer: { userkey: referrer.body.userkey, referralcode: referrer.body.referralcode },
		});
	});

	it("refuses an unknown code, or another app's code, storing nothing", async () => {
		const mine = await createApp();
		const theirs = await createApp();
		const foreign = await theirs.api("register", { email: "t@x.com" });
		for (const referrercode of ["ZZZZZZZZ", foreign.body.referralcode]) {
			const res = await mine.api("register", { email: "new@x.com", referrercode });
			expect(res.status).toBe(404);
			expect(res.body).toMatchObject({ success: false, errorcode: "referrer_code_not_found" });
		}
		expect(await countUsers(mine.appid)).toBe(0);
		expect(await events(mine.appid)).toEqual([]);
	});

	it("rejects a phone with non-digits and a malformed email, naming the field", async () => {
		const { api, appid } = await createApp();
		const phone = await api("register", { phone: "+1 555" });
		expect(phone.status).toBe(400);
		expect(phone.body.fields).toEqual(["phone"]);
		const email = await api("register", { email: "not-an-email" });
		expect(email.body.fields).toEqual(["email"]);
		expect(await countUsers(appid)).toBe(0);
	});

	it("gives 50 concurrent registrations 50 distinct users and codes", async () => {
		const { api, appid } = await createApp();
		const results = await Promise.all(Array.from({ length: 50 }, (_, i) => api("register", { email: `c${i}@x.com` })));
		expect(results.every((r) => r.status === 200)).toBe(true);
		expect(new Set(results.map((r) => r.body.referralcode)).size).toBe(50);
		expect(new Set(results.map((r) => r.body.userkey)).size).toBe(50);
		expect(await countUsers(appid)).toBe(50);
	});

	it("makes one user of 10 concurrent registrations of the same email", async () => {
		const { api, appid } = await createApp();
		const results = await Promise.all(Array.from({ length: 10 }, () => api("register", { email: "dup@x.com" })));
		expect(new Set(results.map((r) => r.body.userkey)).size).toBe(1);
		expect(results.filter((r) => r.body.isexistinguser === false)).toHaveLength(1);
		expect(await countUsers(appid)).toBe(1);
	});

	it("uses the campaign's custom domain in shareurl", async () => {
		const { api, appid, campaignid } = await createApp();
		await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, { customdomain: "refer.shop.example.com" });
		const { body } = await api("register", { email: "d@x.com" });
		expect(body.shareurl).toBe(`https://refer.shop.example.com/r/${body.referralcode}`);
	});
});

describe("updateuser", () => {
	it("changes only the fields sent", async () => {
		const { api } = await createApp();
		const { body } = await api("register", { email: "u@x.com", name: "Old", city: "Lyon" });
		const res = await api("updateuser", { userKey: body.userkey, name: "New+Name", phone: "123", existinguser: true });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ success: true });
		expect(await userRow(body.userkey)).toMatchObject({
			name: "New Name",
			phone: "123",
			city: "Lyon",
			email: "u@x.com",
			isexistinguser: 1,
		});
	});

	it("refuses a phone with non-digits", async () => {
		const { api } = await createApp();
		const { body } = await api("register", { email: "p@x.com", phone: "1" });
		const res = await api("updateuser", { userkey: body.userkey, phone: "12-34" });
		expect(res.status).toBe(400);
		expect((await userRow(body.userkey))?.phone).toBe("1");
	});

	it("keeps email and account id unique within the app (409), but not across apps", async () => {
		const { api } = await createApp();
		const other = await createApp();
		const a = await api("register", { email: "a@x.com", useraccountid: "A" });
		const b = await api("register", { email: "b@x.com", useraccountid: "B" });
		const email = await api("updateuser", { userkey: b.body.userkey, email: "a@x.com" });
		expect(email.status).toBe(409);
		expect(email.body.errorcode).toBe("email_taken");
		const account = await api("updateuser", { userkey: b.body.userkey, useraccountid: "A", name: "Changed" });
		expect(account.status).toBe(409);
		expect(account.body.errorcode).toBe("useraccountid_taken");
		expect(await userRow(b.body.userkey)).toMatchObject({ email: "b@x.com", useraccountid: "B", name: null });
		// Its own values and other apps' values are fine.
		expect((await api("updateuser", { userkey: a.body.userkey, email: "a@x.com" })).status).toBe(200);
		const o = await other.api("register", { email: "o@x.com" });
		expect((await other.api("updateuser", { userkey: o.body.userkey, email: "a@x.com" })).status).toBe(200);
	});

	it("is 404 for an unknown userkey and for another app's userkey", async () => {
		const mine = await createApp();
		const theirs = await createApp();
		const foreign = await theirs.api("register", { email: "f@x.com", name: "Theirs" });
		for (const userkey of ["u0000000000000000000", foreign.body.userkey]) {
			const res = await mine.api("updateuser", { userkey, name: "Hijack" });
			expect(res.status).toBe(404);
			expect(res.body.errorcode).toBe("user_not_found");
		}
		expect((await userRow(foreign.body.userkey))?.name).toBe("Theirs");
	});

	it("requires userkey", async () => {
		const { api } = await createApp();
		const res = await api("updateuser", { name: "x" });
		expect(res.status).toBe(400);
		expect(res.body.fields).toEqual(["userkey"]);
	});
});
