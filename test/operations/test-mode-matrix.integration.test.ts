import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { operations } from "../../src/operations";
import { admin, client, createApp, request } from "../support/api";
import { fetchPage, signIn } from "../support/dashboard";

/**
 * Issue 47, test mode everywhere it is offered: every public operation runs
 * the same scenario with the app's test keys and with its live keys (same
 * emails, same customids), and answers the same outcome kind on both sides
 * (status, success, errorcode, the answer's fields); then each side's ids are
 * tried with the other side's keys and are unknown there (no crossing). The
 * Stripe events' half of the matrix is test/integrations (issue 47's other
 * part).
 */

type Api = ReturnType<typeof client>;
type Answer = { status: number; body: Record<string, any> };

/** The kind of an answer: what must be the same in both modes (not the values: ids, keys, times differ). */
const kind = (a: Answer) => ({
	status: a.status,
	success: a.body.success,
	errorcode: a.body.errorcode ?? null,
	fields: Object.keys(a.body).sort(),
	// A board's and a list's lengths are part of the outcome: an empty test board is not the live board.
	leaderboard: Array.isArray(a.body.leaderboard) ? a.body.leaderboard.length : null,
});

interface Side {
	appid: string;
	api: Api;
	answers: Map<string, Answer[]>;
	ids: { referrer: string; friend: string; code: string; rewarddtlid: string; customid: string };
}

/** The scenario, one call or more per public operation; every answer kept under its operation's name. */
async function scenario(appid: string, api: Api, campaignid: number): Promise<Side> {
	const answers = new Map<string, Answer[]>();
	const call = async (operation: string, body: Record<string, unknown>) => {
		const answer = await api(operation, body);
		answers.set(operation, [...(answers.get(operation) ?? []), answer]);
		return answer;
	};
	const customid = "matrix-order-1";
	await call("getcampaigndata", { campaignid });
	await call("campaignterms", { campaignid });
	const ref = (await call("register", { email: "matrix-ref@example.com", name: "Mara Trix" })).body;
	const friend = (await call("register", { email: "matrix-friend@example.com", name: "Fred", referrercode: ref.referralcode })).body;
	const late = (await call("register", { email: "matrix-late@example.com", name: "Lou" })).body;
	await call("applyreferrercode", { userkey: late.userkey, referrercode: ref.referralcode });
	await call("updateuser", { userkey: ref.userkey, name: "Mara Trix-Two" });
	await call("validatereferrercode", { referrercode: ref.referralcode });
	await call("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Purchase",
		customid,
		growthhack: "SaaS_Referrals",
		transactionvalue: "40",
	});
	await ledgerFor(env, appid, ref.userkey).flush();
	const [reward] = await ledgerFor(env, appid, ref.userkey).listRewards();
	const rewarddtlid = String(reward?.rewarddtlid ?? "");
	await call("getuserbalance", { userkey: ref.userkey, campaignid });
	await call("getfriendsandrewards", { userkey: ref.userkey });
	await call("checkrewardstatus", { rewarddtlid });
	await call("changerewardstatus", { rewardslist: [{ rewarddtlid, rewardstatus: "Approved" }] });
	await call("redeemrewards", { userkey: ref.userkey, amount: "1" });
	await call("invokeoutreach", { userkey: ref.userkey });
	await call("remindfriend", { userkey: ref.userkey, frienduserkey: friend.userkey });
	await call("getsharepage", { userkey: ref.userkey });
	await ledgerFor(env, appid, ref.userkey).flush();
	await call("getleaderboard", { userkey: ref.userkey, campaignid });
	await call("getleaderboard", {});
	await call("reverseconversionevent", { customid, reason: "refunded" });
	return { appid, api, answers, ids: { referrer: ref.userkey, friend: friend.userkey, code: ref.referralcode, rewarddtlid, customid } };
}

describe("test mode: every public operation, test keys and live keys", () => {
	it("answers the same outcome kind on each side, covers every operation, and never crosses", async () => {
		const app = await createApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
		const test = client({ apikey: testapikey, privatekey: testprivatekey });
		const live = await scenario(app.appid, app.api, app.campaignid);
		const tested = await scenario(`${app.appid}_test`, test, app.campaignid);

		// Every operation of the contract and its additions is in the matrix.
		expect([...live.answers.keys()].sort()).toEqual(Object.keys(operations).sort());
		for (const [operation, answers] of live.answers) {
			const testAnswers = tested.answers.get(operation) ?? [];
			expect(
				testAnswers.map(kind),
				`${operation}: ${JSON.stringify(testAnswers.map((a) => a.body))} vs ${JSON.stringify(answers.map((a) => a.body))}`,
			).toEqual(answers.map(kind));
			// The scenario is one that works: every call succeeded on the live side.
			for (const a of answers) expect(a.status, `${operation} live: ${JSON.stringify(a.body)}`).toBe(200);
		}
		// The test board is the test referrer's, the live board the live referrer's.
		const board = (side: Side) => side.answers.get("getleaderboard")?.[1]?.body.leaderboard.map((e: { userkey: string }) => e.userkey);
		expect(board(tested)).toEqual([tested.ids.referrer]);
		expect(board(live)).toEqual([live.ids.referrer]);

		// No crossing: each side's users, codes, rewards and events are unknown to the other side's keys.
		expect(live.ids.referrer).not.toBe(tested.ids.referrer);
		expect(live.ids.code).not.toBe(tested.ids.code);
		for (const [own, other] of [
			[live, tested],
			[tested, live],
		] as const) {
			const { ids } = own;
			const notFound = async (operation: string, body: Record<string, unknown>, errorcode: string) => {
				const answer = await other.api(operation, body);
				expect([answer.status, answer.body.errorcode], `${operation} across modes`).toEqual([404, errorcode]);
			};
			await notFound("getuserbalance", { userkey: ids.referrer, campaignid: app.campaignid }, "user_not_found");
			await notFound("getfriendsandrewards", { userkey: ids.referrer }, "user_not_found");
			await notFound("checkrewardstatus", { rewarddtlid: ids.rewarddtlid }, "reward_not_found");
			await notFound("getsharepage", { userkey: ids.referrer }, "user_not_found");
			await notFound("getleaderboard", { userkey: ids.referrer }, "user_not_found");
			expect((await other.api("validatereferrercode", { referrercode: ids.code })).body.success).toBe(false);
		}
		// The same customid on both sides: two events, one per side, each reversed on its own side only.
		const events = await env.DB.prepare("SELECT appid FROM conversion_events WHERE customid = ? AND appid IN (?, ?) ORDER BY appid")
			.bind(live.ids.customid, app.appid, `${app.appid}_test`)
			.all<{ appid: string }>();
		expect(events.results.map((e) => e.appid)).toEqual([app.appid, `${app.appid}_test`]);
		expect(await ledgerFor(env, app.appid, tested.ids.referrer).listRewards()).toEqual([]);
		expect(await ledgerFor(env, `${app.appid}_test`, live.ids.referrer).listRewards()).toEqual([]);
	});
});

describe("test mode: the leaderboard", () => {
	it("getleaderboard with test keys answers the test board; the admin API (?mode=test) and the dashboard under Test data show it, never the live one", async () => {
		const app = await createApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
		const test = client({ apikey: testapikey, privatekey: testprivatekey });
		const referrerWithFriend = async (appid: string, api: Api, name: string, n: number) => {
			const ref = (await api("register", { email: `${crypto.randomUUID()}@example.com`, name })).body;
			for (let i = 0; i < n; i++) {
				const friend = (await api("register", { email: `${crypto.randomUUID()}@example.com`, referrercode: ref.referralcode })).body;
				const res = await api("registerconversionevent", {
					userkey: friend.userkey,
					eventname: "Purchase",
					customid: `board-${crypto.randomUUID()}`,
					growthhack: "SaaS_Referrals",
				});
				expect(res.status).toBe(200);
			}
			await ledgerFor(env, appid, ref.userkey).flush();
			return ref;
		};
		await referrerWithFriend(app.appid, app.api, "Livia Live", 2);
		const tester = await referrerWithFriend(`${app.appid}_test`, test, "Tess Test", 1);

		const board = await test("getleaderboard", { userkey: tester.userkey });
		expect(board.status).toBe(200);
		expect(board.body.leaderboard.map((e: { displayname: string }) => e.displayname)).toEqual(["Tess T."]);
		expect(board.body.user).toEqual({ rank: 1, friendsconverted: 1 });
		// A campaign id of the app, named: the same board.
		expect((await test("getleaderboard", { campaignid: app.campaignid })).body.leaderboard).toHaveLength(1);

		const operator = await admin("GET", `/apps/${app.appid}/leaderboard?mode=test`);
		expect(operator.status).toBe(200);
		expect(operator.body.leaderboard.map((e: { displayname: string }) => e.displayname)).toEqual(["Tess T."]);
		expect(
			(await admin("GET", `/apps/${app.appid}/leaderboard`)).body.leaderboard.map((e: { displayname: string }) => e.displayname),
		).toEqual(["Livia L."]);

		const session = await signIn();
		const switched = await session.post(`/dashboard/apps/${app.appid}/mode`, { mode: "test" });
		const mode =
			switched.headers
				.getSetCookie()
				.find((c) => c.startsWith("dashboard_mode="))
				?.split(";")[0] ?? "";
		const on = await (
			await fetchPage(`/dashboard/apps/${app.appid}/leaderboard`, { headers: { cookie: `${session.cookie}; ${mode}` } })
		).text();
		expect(on).toContain("Tess T.");
		expect(on).not.toContain("Livia L.");
		expect(on).toContain('<p class="flash testmode" role="status" data-testid="test-mode-statement">');
		const off = await (await session.get(`/dashboard/apps/${app.appid}/leaderboard`)).text();
		expect(off).toContain("Livia L.");
		expect(off).not.toContain("Tess T.");
	});
});

describe("test mode: ?mode=test where it does not apply", () => {
	it("is 400 naming mode on a campaign's change and delete, and on admin routes with no test side; nothing changes", async () => {
		const app = await createApp();
		const campaign = `/apps/${app.appid}/campaigns/${app.campaignid}`;
		const refused = [
			await admin("PATCH", `${campaign}?mode=test`, { campaignname: "Changed in test mode" }),
			await admin("DELETE", `${campaign}?mode=test`),
			await admin("GET", "/apps?mode=test"),
			await admin("POST", "/apps?mode=test", { name: "Test-mode app", landingurl: "https://shop.example.com/" }),
			await admin("PATCH", `/apps/${app.appid}?mode=test`, { name: "Renamed in test mode" }),
			await admin("GET", `/apps/${app.appid}/members?mode=test`),
			await admin("GET", `/apps/${app.appid}/campaigns?mode=test`),
		];
		for (const [i, res] of refused.entries()) {
			expect(res.status, `call ${i}`).toBe(400);
			expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: ["mode"] });
		}
		expect((await admin("GET", campaign)).body.campaignname).not.toBe("Changed in test mode");
		expect((await admin("GET", `/apps/${app.appid}`)).body.name).toBe("Test app");
		// mode=live is the default everywhere.
		expect((await admin("GET", "/apps?mode=live&limit=1")).status).toBe(200);
	});

	it("is 400 naming mode on a public operation whose key pair says the other mode; the matching mode is accepted", async () => {
		const app = await createApp();
		const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
		const post = (query: string, keys: { apikey: string; privatekey: string }, body: Record<string, unknown>) =>
			request(`/saas/v1_0/register${query}`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ ...keys, ...body }),
			});
		const live = { apikey: app.apikey, privatekey: app.privatekey };
		const test = { apikey: testapikey, privatekey: testprivatekey };
		for (const [query, keys] of [
			["?mode=test", live],
			["?mode=live", test],
			["?mode=sandbox", live],
		] as const) {
			const res = await post(query, keys, { email: "mode-query@example.com" });
			expect(res.status, query).toBe(400);
			expect(await res.json()).toMatchObject({ errorcode: "validation_failed", fields: ["mode"] });
		}
		// Nothing was registered by the refused calls, on either side.
		const registered = await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE appid IN (?, ?) AND email = ?")
			.bind(app.appid, `${app.appid}_test`, "mode-query@example.com")
			.first<{ n: number }>();
		expect(registered?.n).toBe(0);
		expect((await post("?mode=test", test, { email: "mode-query@example.com" })).status).toBe(200);
		expect((await post("?mode=live", live, { email: "mode-query@example.com" })).status).toBe(200);
	});
});
