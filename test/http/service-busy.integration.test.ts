import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { app as worker } from "../../src/http/app";
import { forgetCachedKey } from "../../src/http/auth";
import { withBindings } from "../../src/instrument/d1-metrics";
import { ledgerFor } from "../../src/ledger/stub";
import { ADMIN_TOKEN, createApp } from "../support/api";
import { signIn } from "../support/dashboard";
import { d1DownFrom, OVERLOADED } from "./d1-down";

// Issue 33: D1 busy or down is a clean, retryable answer. D1 goes down at the
// Nth round trip of an operation (D1's own "overloaded" text) for every N the
// operation reaches; each answer must be 503 service_busy with Retry-After and
// retryable: true, and the state afterwards must be the state before the call
// or, where the change had committed, the state a successful retry leaves
// (the retry then changes nothing more). Idempotent reads are retried once.

const GROWTH = "SaaS_Referrals";
/** More round trips than any operation makes: the loop stops at the first N the operation never reaches. */
const MAX_TRIPS = 20;

type Fixture = Awaited<ReturnType<typeof fixture>>;
let fx: Fixture;
let serial = 0;
const next = () => `${Date.now().toString(36)}-${++serial}`;

async function fixture() {
	const app = await createApp({
		holddays: 0,
		rewardrules: [
			{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%" },
			{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
		],
	});
	const referrer = (await app.api("register", { email: "ref@x.com", name: "Rita" })).body;
	const friend = (await app.api("register", { email: "fr@x.com", name: "Fred", referrercode: referrer.referralcode })).body;
	const purchase = async () => {
		const customid = String(700_000 + ++serial);
		const res = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Purchase",
			customid,
			transactionvalue: "100",
			growthhack: GROWTH,
		});
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		return customid;
	};
	for (let i = 0; i < 3; i++) await purchase();
	return { app, referrer, friend, purchase };
}

let tables: Promise<{ name: string; byapp: number }[]> | undefined;

/**
 * The D1 tables state() counts, read once per file, and whether each holds apps' rows (has an appid column): a table of
 * apps' rows counts this app's only, since a test never assumes it has the database to itself and the background work
 * of earlier files (ledgers' flushes, the projection's consumer) may still write their own apps' rows. Left out: the
 * key a failed keyed call held is let go (or expires), not state a client sees; delivery attempts, and the local
 * mailbox in development (dev_mail), are the queue consumer's record of earlier emails, written whenever it runs.
 */
function countedTables() {
	tables ??= env.DB.prepare(
		`SELECT name, EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'appid') AS byapp FROM sqlite_master AS m
		 WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%'
		 AND name NOT IN ('idempotency_keys', 'delivery_attempts', 'dev_mail')`,
	)
		.all<{ name: string; byapp: number }>()
		.then((r) => r.results);
	return tables;
}

/** Row counts of every D1 table (the app's rows of those that hold apps'), the app's users (timestamps aside) and both ledgers' rewards, after their flushes. */
async function state(): Promise<string> {
	const { app, referrer, friend } = fx;
	for (const userkey of [referrer.userkey, friend.userkey]) await ledgerFor(env, app.appid, userkey).flush();
	const counts: Record<string, number> = {};
	for (const { name, byapp } of await countedTables()) {
		const count = env.DB.prepare(`SELECT COUNT(*) AS n FROM "${name}"${byapp ? " WHERE appid = ?" : ""}`);
		counts[name] = (await (byapp ? count.bind(app.appid) : count).first<{ n: number }>())?.n ?? 0;
	}
	const users = await env.DB.prepare("SELECT * FROM users WHERE appid = ? ORDER BY userid").bind(app.appid).all();
	const undated = users.results.map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !k.endsWith("_at"))));
	const ledgers = [];
	for (const userkey of [referrer.userkey, friend.userkey]) {
		ledgers.push(
			(await ledgerFor(env, app.appid, userkey).listRewards()).map((r) => ({
				id: r.rewarddtlid,
				status: r.rewardstatus,
				amount: r.amount,
				redeemed: r.redeemed ?? null,
			})),
		);
	}
	return JSON.stringify({ counts, users: undated, ledgers });
}

function post(operation: string, body: Record<string, unknown>): Request {
	return new Request(`http://service.test/saas/v1_0/${operation}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ apikey: fx.app.apikey, privatekey: fx.app.privatekey, ...body }),
	});
}

/** Sends `request` to the Worker with D1 down from its `n`th round trip; waits for its background work. */
async function withD1DownFrom(n: number, request: Request) {
	// The app's key is looked up again (the isolate's cache would skip it): authentication is the first round trip.
	forgetCachedKey(fx.app.apikey);
	const down = d1DownFrom(env.DB, n);
	const ctx = createExecutionContext();
	const res = await worker.fetch(request, withBindings(env, { DB: down.db }), ctx);
	const firedBeforeAnswer = down.fired;
	const text = await res.text();
	await waitOnExecutionContext(ctx);
	return { res, text, firedBeforeAnswer, calls: down.calls };
}

/** Every operation with a body for one call (fresh ids where a repeat would be refused). */
const cases: Record<string, () => Promise<Record<string, unknown>>> = {
	getcampaigndata: async () => ({ campaignid: fx.app.campaignid }),
	campaignterms: async () => ({ campaignid: fx.app.campaignid }),
	validatereferrercode: async () => ({ referrercode: fx.referrer.referralcode }),
	getsharepage: async () => ({ userkey: fx.referrer.userkey }),
	getuserbalance: async () => ({ userkey: fx.referrer.userkey }),
	getfriendsandrewards: async () => ({ userkey: fx.referrer.userkey }),
	checkrewardstatus: async () => ({ rewarddtlid: (await ledgerFor(env, fx.app.appid, fx.referrer.userkey).listRewards())[0]?.rewarddtlid }),
	register: async () => ({ email: `new-${next()}@x.com`, referrercode: fx.referrer.referralcode }),
	updateuser: async () => ({ userkey: fx.friend.userkey, name: `Fred ${next()}` }),
	applyreferrercode: async () => {
		const late = (await fx.app.api("register", { email: `late-${next()}@x.com` })).body;
		return { userkey: late.userkey, referrercode: fx.referrer.referralcode };
	},
	registerconversionevent: async () => ({
		userkey: fx.friend.userkey,
		eventname: "Purchase",
		customid: String(700_000 + ++serial),
		transactionvalue: "100",
		growthhack: GROWTH,
	}),
	redeemrewards: async () => {
		await fx.purchase();
		return { userkey: fx.referrer.userkey, amount: "1" };
	},
	changerewardstatus: async () => {
		const [reward] = await ledgerFor(env, fx.app.appid, fx.friend.userkey).listRewards();
		return {
			rewardslist: [{ rewarddtlid: reward?.rewarddtlid, rewardstatus: reward?.rewardstatus === "Approved" ? "UnderReview" : "Approved" }],
		};
	},
	reverseconversionevent: async () => ({ customid: await fx.purchase(), refundvalue: 50, refundid: `re-${next()}` }),
	invokeoutreach: async () => ({ email: `out-${next()}@x.com`, name: "Nina" }),
	remindfriend: async () => ({ userkey: fx.referrer.userkey, frienduserkey: fx.friend.userkey }),
};

describe("D1 down at the Nth round trip of every public operation", () => {
	beforeAll(async () => {
		fx = await fixture();
	});

	it.each(Object.keys(cases))("%s: 503 service_busy with Retry-After at every round trip, state before or as after", async (operation) => {
		let reached = 0;
		for (let n = 1; n <= MAX_TRIPS; n++) {
			const body = await cases[operation]!();
			const before = await state();
			const failed = await withD1DownFrom(n, post(operation, body));
			if (!failed.firedBeforeAnswer) {
				// The operation's request path makes fewer than n round trips: done (its background work may have failed, not its answer).
				expect(failed.res.status, failed.text).toBeLessThan(500);
				break;
			}
			reached = n;
			expect(failed.res.status, `round trip ${n}: ${failed.text}`).toBe(503);
			expect(failed.res.headers.get("retry-after")).toBe("2");
			expect(JSON.parse(failed.text)).toMatchObject({ success: false, errorcode: "service_busy", retryable: true });
			const after = await state();
			// D1 is back: the client's retry of the same call.
			const retry = await worker.fetch(post(operation, body), env, createExecutionContext());
			expect(retry.status, `retry after round trip ${n}: ${await retry.clone().text()}`).toBeLessThan(500);
			await retry.body?.cancel();
			const retried = await state();
			if (after === before) continue;
			if (operation === "invokeoutreach") {
				// Finds or creates the user, then queues the email: a failure in between leaves the user
				// (as a register would), and the retry finds it and queues the one email. Converged: one
				// user and one email more than before, as one clean call makes.
				const [b, r] = [JSON.parse(before).counts, JSON.parse(retried).counts];
				expect({ users: r.users - b.users, outbox: r.outbox_events - b.outbox_events }, `round trip ${n}`).toEqual({
					users: 1,
					outbox: 1,
				});
				continue;
			}
			expect(JSON.parse(after), `round trip ${n} left a half-done change`).toEqual(JSON.parse(retried));
		}
		expect(reached, "D1 was never reached").toBeGreaterThan(0);
	});
});

describe("idempotent reads are retried once", () => {
	it("one overloaded read is retried and answered", async () => {
		fx ??= await fixture();
		const once = d1DownFrom(env.DB, 1, 1);
		const ctx = createExecutionContext();
		const res = await worker.fetch(post("campaignterms", { campaignid: fx.app.campaignid }), withBindings(env, { DB: once.db }), ctx);
		expect(res.status, await res.clone().text()).toBe(200);
		expect(once.fired).toBe(true);
	});

	it("admin routes and dashboard pages answer 503 with Retry-After", async () => {
		fx ??= await fixture();
		const adminRes = await withD1DownFrom(
			1,
			new Request(`http://service.test/admin/v1/apps/${fx.app.appid}/users`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
		);
		expect(adminRes.res.status, adminRes.text).toBe(503);
		expect(adminRes.res.headers.get("retry-after")).toBe("2");
		expect(JSON.parse(adminRes.text)).toMatchObject({ errorcode: "service_busy", retryable: true });
		const { cookie } = await signIn();
		const page = await withD1DownFrom(1, new Request(`http://service.test/dashboard/apps/${fx.app.appid}/users`, { headers: { cookie } }));
		expect(page.res.status, page.text).toBe(503);
		expect(page.res.headers.get("retry-after")).toBe("2");
		expect(page.res.headers.get("content-type")).toContain("text/html");
		expect(page.text).toContain("busy");
		// Once D1 is back the same page is served.
		const served = await worker.fetch(
			new Request(`http://service.test/dashboard/apps/${fx.app.appid}/users`, { headers: { cookie } }),
			env,
			createExecutionContext(),
		);
		expect(served.status).toBe(200);
	});

	it("recognises D1's own texts and nothing else", async () => {
		const { isD1Unavailable } = await import("../../src/instrument/d1-availability");
		for (const text of [
			OVERLOADED,
			"D1_ERROR: D1 DB is overloaded. Too many requests queued.",
			"D1_ERROR: Network connection lost.",
			"D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.",
			"D1_ERROR: D1 DB reset because its code was updated.",
			"D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.",
		])
			expect(isD1Unavailable(new Error(text)), text).toBe(true);
		for (const text of ["D1_ERROR: UNIQUE constraint failed: users.email", "D1_ERROR: no such table: x", "TypeError: x is undefined"])
			expect(isD1Unavailable(new Error(text)), text).toBe(false);
	});
});
