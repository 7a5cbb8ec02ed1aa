import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { ADMIN_TOKEN, admin, createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";
import { until } from "../support/until";

type App = Awaited<ReturnType<typeof createApp>>;

let nextCustomId = 9000;
const event = (app: App, userkey: string, eventname = "Signup") =>
	app.api("registerconversionevent", { userkey, eventname, customid: String(nextCustomId++), growthhack: "SaaS_Referrals" });

// Each test's Bob is a different person (the file's tests share one D1), so a scan finds only its own traces.
let bobs = 0;
function newBob() {
	const n = ++bobs;
	return {
		email: `bob.private${n}@example.com`,
		name: `Bobby Tables ${n}`,
		phone: `555019${n}`,
		profileimage: `https://img.example.com/bobby${n}.png`,
		city: "Lyon",
		paymentcustomerid: `cus_bobby_${n}`,
		useraccountid: `acct-bobby-${n}`,
		deviceid: `bobby-device-${n}`,
		ipaddress: "198.51.100.99",
		useragent: `BobbyBrowser/${n}`,
	};
}
const tracesOf = (b: ReturnType<typeof newBob>) => [
	b.email,
	b.name,
	b.phone,
	b.profileimage,
	b.paymentcustomerid,
	b.useraccountid,
	b.deviceid,
	b.useragent,
];

/** Ann refers Bob, Bob refers Cy; both events rewarded; Ann redeems part; Bob's link clicked. */
async function family() {
	const BOB = newBob();
	const app = await createApp();
	const ann = (await app.api("register", { email: "ann@example.com", name: "Ann" })).body;
	const bob = (await app.api("register", { ...BOB, referrercode: ann.referralcode })).body;
	const cy = (await app.api("register", { email: "cy@example.com", name: "Cy", referrercode: bob.referralcode })).body;
	await event(app, bob.userkey);
	await event(app, cy.userkey);
	// D1's rows of the events follow the projection (issue 49): the family is complete once both are there.
	await until(
		"both events in D1",
		() => env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(app.appid).first<{ n: number }>(),
		(row) => row?.n === 2,
	);
	expect((await app.api("redeemrewards", { userkey: ann.userkey, amount: "4" })).status).toBe(200);
	await request(`/r/${bob.referralcode}`, {
		headers: { "cf-connecting-ip": "203.0.113.5", "user-agent": "Clicker/1" },
		redirect: "manual",
	});
	await flushClicks(bob.referralcode);
	return { app, ann, bob, cy, BOB, BOB_TRACES: tracesOf(BOB) };
}

// Read from the ledgers: an erased user is refused by getuserbalance (410), its balance stays all the same.
const balances = async (app: App, ...userkeys: string[]) =>
	Promise.all(userkeys.map((userkey) => ledgerFor(env, app.appid, userkey).balance({ campaignid: app.campaignid })));

async function scanD1(needles: string[]): Promise<string[]> {
	const tables = await env.DB.prepare(
		"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
	).all<{
		name: string;
	}>();
	const found: string[] = [];
	for (const { name } of tables.results) {
		const text = JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results).toLowerCase();
		for (const needle of needles) if (text.includes(needle.toLowerCase())) found.push(`${needle} in ${name}`);
	}
	return found;
}

describe("export", () => {
	it("gives everything held about the person: profile, devices, IP hashes, friends, events, rewards, clicks; and logs it", async () => {
		const { app, ann, bob, cy, BOB } = await family();
		const res = await request(`/admin/v1/apps/${app.appid}/users/${bob.userkey}/export`, {
			headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "x-admin-actor": "ops@shop" },
		});
		expect(res.status).toBe(200);
		const doc = (await res.json()) as Record<string, any>;
		expect(doc.user).toMatchObject({
			userkey: bob.userkey,
			email: BOB.email,
			name: BOB.name,
			phone: BOB.phone,
			city: "Lyon",
			useragent: BOB.useragent,
			referreruserkey: ann.userkey,
			erasedat: null,
		});
		expect(doc.devices).toEqual([{ deviceid: BOB.deviceid, firstseen: expect.any(String) }]);
		expect(doc.ipaddresshashes).toEqual([{ iphash: expect.stringMatching(/^[0-9a-f]{64}$/), firstseen: expect.any(String) }]);
		expect(JSON.stringify(doc)).not.toContain(BOB.ipaddress);
		expect(doc.friends).toEqual([{ userkey: cy.userkey, status: "SignUp", registeredat: expect.any(String) }]);
		expect(doc.events).toHaveLength(1);
		expect(doc.rewards.map((r: any) => r.usertype).sort()).toEqual(["Friend", "Referrer"]);
		expect(doc.rewardsgiventoreferrer).toHaveLength(1);
		expect(doc.sharelinkclicks.daily).toEqual([{ day: expect.any(String), clicks: 1 }]);
		expect(doc.sharelinkclicks.recent).toEqual([{ clickedat: expect.any(String), iphash: expect.any(String), useragent: "Clicker/1" }]);
		// The authenticated actor, whatever header the client sends (issue 32): no client names itself in the log.
		expect(doc.privacylog).toEqual([{ action: "export", actor: "superuser", at: expect.any(String) }]);
	});

	it("404 for an unknown user or app", async () => {
		const { app } = await family();
		expect((await admin("GET", `/apps/${app.appid}/users/u0000000000000000000/export`)).body.errorcode).toBe("user_not_found");
		expect((await admin("DELETE", `/apps/app_nope/users/u0000000000000000000`)).body.errorcode).toBe("app_not_found");
	});
});

describe("erase", () => {
	it("removes the person from D1, its ledger and its referrer's rewards; every balance stays exact; idempotent and logged", async () => {
		const { app, ann, bob, cy, BOB_TRACES } = await family();
		const before = await balances(app, ann.userkey, bob.userkey, cy.userkey);
		const rewardsBefore = await Promise.all([ann, bob, cy].map((u) => ledgerFor(env, app.appid, u.userkey).listRewards()));
		expect(await scanD1(BOB_TRACES)).not.toEqual([]);

		const first = await request(`/admin/v1/apps/${app.appid}/users/${bob.userkey}`, {
			method: "DELETE",
			headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "x-admin-actor": "dpo@shop" },
		});
		expect(first.status).toBe(200);
		expect(await first.json()).toMatchObject({ userkey: bob.userkey, erased: true, alreadyerased: false });
		const again = await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`);
		expect(again.body).toMatchObject({ erased: true, alreadyerased: true });

		for (const u of [ann, bob, cy]) await ledgerFor(env, app.appid, u.userkey).flush();
		expect(await scanD1(BOB_TRACES)).toEqual([]);
		const rewardsAfter = await Promise.all([ann, bob, cy].map((u) => ledgerFor(env, app.appid, u.userkey).listRewards()));
		for (const list of rewardsAfter) {
			for (const needle of BOB_TRACES) expect(JSON.stringify(list)).not.toContain(needle);
		}
		// Money untouched: same rewards, amounts, statuses, redemptions and balances.
		const money = (lists: typeof rewardsBefore) =>
			lists.map((list) => list.map((r) => [r.rewarddtlid, r.amount, r.redeemed, r.rewardstatus, r.version]));
		expect(money(rewardsAfter)).toEqual(money(rewardsBefore));
		expect(rewardsAfter[0]?.[0]).toMatchObject({ friendemail: "", friendname: "" });
		expect(await balances(app, ann.userkey, bob.userkey, cy.userkey)).toEqual(before);

		// The referral code is dead; Cy keeps its referrer; Bob's events and rewards stay.
		expect((await app.api("validatereferrercode", { referrercode: bob.referralcode })).status).toBe(404);
		expect((await request(`/r/${bob.referralcode}`, { redirect: "manual" })).status).toBe(404);
		expect((await app.api("register", { email: "dee@example.com", referrercode: bob.referralcode })).status).toBe(404);
		const cyReferrer = await env.DB.prepare(
			"SELECT r.userkey FROM users f JOIN users r ON r.userid = f.referrer_userid WHERE f.userkey = ?",
		)
			.bind(cy.userkey)
			.first();
		expect(cyReferrer).toEqual({ userkey: bob.userkey });
		expect((await app.api("getfriendsandrewards", { userkey: bob.userkey })).body.errorcode).toBe("user_erased");
		// Its data is not collected again.
		const update = await app.api("updateuser", { userkey: bob.userkey, name: "Bob again", deviceid: "again-1" });
		expect(update.status).toBe(410);
		await app.api("invokeoutreach", { userkey: bob.userkey, deviceid: "again-2", ipaddress: "192.0.2.1" });
		expect(
			await env.DB.prepare("SELECT COUNT(*) AS n FROM user_identifiers WHERE userid = (SELECT userid FROM users WHERE userkey = ?)")
				.bind(bob.userkey)
				.first(),
		).toEqual({ n: 0 });

		const log = await env.DB.prepare("SELECT action, actor FROM privacy_log WHERE userkey = ? ORDER BY logid").bind(bob.userkey).all();
		expect(log.results).toEqual([
			{ action: "erase", actor: "superuser" },
			{ action: "erase", actor: "superuser" },
		]);
		const exported = (await admin("GET", `/apps/${app.appid}/users/${bob.userkey}/export`)).body;
		expect(exported.user).toMatchObject({ email: null, name: null, phone: null, erasedat: expect.any(String) });
		expect(exported.devices).toEqual([]);
		expect(exported.ipaddresshashes).toEqual([]);
		expect(exported.sharelinkclicks.recent).toEqual([]);
	});

	it("a new registration with the erased email is a new person", async () => {
		const { app, bob, BOB } = await family();
		await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`);
		const again = await app.api("register", { email: BOB.email });
		expect(again.body).toMatchObject({ isexistinguser: false });
		expect(again.body.userkey).not.toBe(bob.userkey);
	});
});
