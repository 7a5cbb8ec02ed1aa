import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";

const importUsers = (appid: string, users: unknown[]) => admin("POST", `/apps/${appid}/users:import`, { users });
const countUsers = async (appid: string) =>
	(await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE appid = ?").bind(appid).first<{ n: number }>())?.n;

describe("POST /admin/v1/apps/:appid/users:import", () => {
	it("imports users with their own codes and referrers (existing or earlier in the call) as register would", async () => {
		const app = await createApp();
		const existing = (await app.api("register", { email: "old@example.com" })).body;
		const code = `MIG${Date.now().toString(36).toUpperCase()}`;

		const res = await importUsers(app.appid, [
			{ email: "ann@example.com", name: "Ann", referralcode: code.toLowerCase() },
			{ email: "bob@example.com", referrercode: code },
			{ useraccountid: "acct-carl", referrercode: existing.referralcode },
			{ email: "dora@example.com", referrer: { email: "ann@example.com" } },
		]);

		expect(res.status).toBe(201);
		expect(res.body.imported).toBe(4);
		const [ann, bob, carl, dora] = res.body.users;
		expect(ann).toMatchObject({ referralcode: code, hasreferrer: false, referrercode: "" });
		expect(bob).toMatchObject({ email: "bob@example.com", hasreferrer: true, referrercode: code });
		expect(carl).toMatchObject({ useraccountid: "acct-carl", referrercode: existing.referralcode });
		expect(dora).toMatchObject({ hasreferrer: true, referrercode: code });

		// The imported users are real users of the app: found by email, counted as friends, reachable by their code.
		const friends = (await app.api("getfriendsandrewards", { userkey: ann.userkey })).body;
		expect(friends.totalfriends).toBe(2);
		expect(friends.friends.map((f: { email: string }) => f.email).sort()).toEqual(["bob@example.com", "dora@example.com"]);
		expect((await app.api("getfriendsandrewards", { userkey: existing.userkey })).body.totalfriends).toBe(1);
		const again = await app.api("register", { email: "bob@example.com" });
		expect(again.body).toMatchObject({ message: "User already registered.", userkey: bob.userkey, referrercode: code });
		const friend = await app.api("register", { email: "eve@example.com", referrercode: code });
		expect(friend.body).toMatchObject({ hasreferrer: true, referrercode: code });
	});

	it("imports nothing when one user is refused, and names each refused row", async () => {
		const app = await createApp();
		await app.api("register", { email: "taken@example.com" });
		const res = await importUsers(app.appid, [
			{ email: "fine@example.com" },
			{ email: "taken@example.com" },
			{ email: "twice@example.com" },
			{ email: "twice@example.com" },
		]);
		expect(res.status).toBe(409);
		expect(res.body).toMatchObject({ success: false, errorcode: "import_rejected" });
		expect(res.body.errors).toEqual([
			expect.objectContaining({ index: 1, errorcode: "email_taken" }),
			expect.objectContaining({ index: 3, errorcode: "email_taken" }),
		]);
		expect(await countUsers(app.appid)).toBe(1);

		const unknown = await importUsers(app.appid, [{ email: "a1@example.com" }, { email: "a2@example.com", referrercode: "NOSUCHCODE" }]);
		expect(unknown.status).toBe(400);
		expect(unknown.body.errors).toEqual([expect.objectContaining({ index: 1, errorcode: "referrer_code_not_found" })]);
		// A referrer must come before its friends.
		const order = await importUsers(app.appid, [
			{ email: "b1@example.com", referrer: { email: "b2@example.com" } },
			{ email: "b2@example.com" },
		]);
		expect(order.body.errors).toEqual([expect.objectContaining({ index: 0, errorcode: "referrer_not_found" })]);
		expect(await countUsers(app.appid)).toBe(1);
	});

	it("validates like register and bounds the call at 1,000 users", async () => {
		const app = await createApp();
		const bad = await importUsers(app.appid, [{ email: "not an email" }]);
		expect(bad.status).toBe(400);
		expect(bad.body.errorcode).toBe("validation_failed");
		expect((await importUsers(app.appid, [])).status).toBe(400);
		const tooMany = Array.from({ length: 1001 }, (_, i) => ({ email: `u${i}@example.com` }));
		expect((await importUsers(app.appid, tooMany)).status).toBe(400);
		expect((await admin("POST", "/apps/app_nosuchapp/users:import", { users: [{ email: "x@example.com" }] })).status).toBe(404);
		expect(await countUsers(app.appid)).toBe(0);

		const referrer = (await app.api("register", { email: "big@example.com" })).body;
		const many = Array.from({ length: 1000 }, (_, i) => ({ email: `f${i}@example.com`, referrercode: referrer.referralcode }));
		const res = await importUsers(app.appid, many);
		expect(res.status).toBe(201);
		expect(res.body.imported).toBe(1000);
		expect((await app.api("getfriendsandrewards", { userkey: referrer.userkey, pagesize: 1 })).body.totalfriends).toBe(1000);
		expect(await countUsers(app.appid)).toBe(1001);
	});
});
