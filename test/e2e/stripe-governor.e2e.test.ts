import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeStripe, type StripeCall, startFakeStripe } from "./fake-stripe";
import { type Harness, startHarness } from "./stripe-harness";

// Issue 47, "Stripe's own limits": a local Stripe that takes at most 25 requests a second (test mode's
// limit; 429 `rate_limit` above it, nothing done) and a burst of 1,000 approvals at once. The governor
// of the Stripe account (src/integrations/stripe/governor.ts) keeps the payouts under its test-mode
// rate, so the burst queues and drains: every reward paid exactly once, and 429s stay within what the
// governor allows for (ALLOWED_429: its pacing slips only when the machine stalls a request).

// GOVERNOR_REFERRERS: fewer for a quick look (10 make 100 approvals); the test's claim is about 100 (1,000 approvals).
const REFERRERS = Number(process.env.GOVERNOR_REFERRERS ?? 100);
const FRIENDS = 10;
const LIMIT = 25;
const ALLOWED_429 = 10;

// The pacing itself, on a second app connected in live mode: the consumer settles a batch of 10 payouts at once, so
// without the governor they leave together; a local Stripe taking 3 a second and a live-mode rate of 2 a second
// (STRIPE_RATE_LIVE, only this app is live) tell the paced run from the unpaced one. GOVERNOR_PACING_RATE (diagnosis
// only) replaces the 2, e.g. 1000 to see the check fail with the governor's pacing switched off.
const PACED_RATE = Number(process.env.GOVERNOR_PACING_RATE ?? 2);
const PACED_LIMIT = 3;
const PACED_PAYOUTS = 40;
const PACED_STALLS = 2;

let h: Harness;
let paced: FakeStripe;

beforeAll(async () => {
	// GOVERNOR_RATE (diagnosis only): the governor's test-mode rate instead of its default, e.g. 1000 to see the burst unpaced.
	// The re-drive after a minute (3 s in the other Stripe tests): sooner, it would send again payouts still in the
	// governor's queue, each repeat taking a moment of the account's rate.
	const vars: Record<string, string> = {
		STRIPE_REDRIVE_AFTER_MS: "60000",
		STRIPE_RATE_LIVE: String(PACED_RATE),
		...(process.env.GOVERNOR_RATE ? { STRIPE_RATE_TEST: process.env.GOVERNOR_RATE } : {}),
	};
	[h, paced] = await Promise.all([
		startHarness("stripe-governor", { autoapprove: false }, { limit: { perSecond: LIMIT }, vars }),
		startFakeStripe(undefined, { perSecond: PACED_LIMIT }),
	]);
}, 300_000);

afterAll(async () => {
	await h?.stop();
	await paced?.close();
});

/** The most requests in any 1 s window (each request's own window: the ones that arrived in the second before it). */
const peakPerSecond = (calls: StripeCall[]) =>
	Math.max(0, ...calls.map((c) => calls.filter((d) => d.at > c.at - 1000 && d.at <= c.at).length));

/** Runs `jobs` with at most `width` at once. */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
	const results: T[] = [];
	let next = 0;
	await Promise.all(
		Array.from({ length: width }, async () => {
			while (next < jobs.length) {
				const i = next++;
				results[i] = await (jobs[i] as () => Promise<T>)();
			}
		}),
	);
	return results;
}

describe("a burst of payouts under Stripe's rate limit", { timeout: 900_000 }, () => {
	it("1,000 approvals at once: all paid exactly once, 429s within the governor's allowance", async () => {
		const setup = Date.now();
		const referrers = await pool(
			Array.from({ length: REFERRERS }, (_, i) => async () => {
				const res = await h.api("register", { email: `gov${i}@example.com`, paymentcustomerid: `cus_gov_${i}` });
				expect(res).toMatchObject({ status: 200 });
				return res.body as { userkey: string; referralcode: string };
			}),
			20,
		);
		const friends = referrers.flatMap((r, i) => Array.from({ length: FRIENDS }, (_, j) => ({ r, email: `gov${i}.f${j}@example.com` })));
		await pool(
			friends.map(({ r, email }, k) => async () => {
				const friend = await h.api("register", { email, referrercode: r.referralcode });
				expect(friend).toMatchObject({ status: 200 });
				const conversion = await h.api("registerconversionevent", {
					userkey: friend.body.userkey,
					eventname: "Transaction",
					transactionvalue: "100",
					customid: String(1000 + k),
					growthhack: "SaaS_Referrals",
				});
				if (conversion.status !== 200) throw new Error(JSON.stringify(conversion.body));
			}),
			20,
		);
		const rewardids = await h.until(
			"1,000 rewards awaiting review",
			async () => {
				const ids: string[] = [];
				for (const r of referrers) {
					const friendsOf = (await h.api("getfriendsandrewards", { userkey: r.userkey })).body.friends ?? [];
					for (const f of friendsOf) for (const e of f.earnedrewards ?? []) ids.push(e.rewarddtlid);
				}
				return ids.length === REFERRERS * FRIENDS ? ids : undefined;
			},
			300_000,
		);
		console.log(JSON.stringify({ setupSeconds: (Date.now() - setup) / 1000 }));
		const started = Date.now();
		const approvals = await Promise.all(
			rewardids.map((rewarddtlid) => h.api("changerewardstatus", { rewardslist: [{ rewarddtlid, rewardstatus: "Approved" }] })),
		);
		expect(approvals.map((a) => a.status).filter((s) => s !== 200)).toEqual([]);
		console.log(JSON.stringify({ approvedSeconds: (Date.now() - started) / 1000 }));
		await h.until(
			"every reward paid",
			async () => {
				const paid = h.fake.created.filter((t) => t.customer.startsWith("cus_gov_")).length;
				return paid === REFERRERS * FRIENDS ? true : undefined;
			},
			600_000,
		);
		const seconds = (Date.now() - started) / 1000;
		const created = h.fake.created.filter((t) => t.customer.startsWith("cus_gov_"));
		// Exactly once: one balance transaction per reward, each of its 10.00 USD, each key once.
		expect(new Set(created.map((t) => t.rewarddtlid)).size).toBe(REFERRERS * FRIENDS);
		expect(created.every((t) => t.amount === -1000)).toBe(true);
		expect(new Set(created.map((t) => t.idempotencyKey)).size).toBe(created.length);
		const limited = h.fake.calls.filter((c) => c.status === 429).length;
		const posts = h.fake.calls.filter((c) => c.method === "POST" && c.at >= started);
		const perSecondPeak = peakPerSecond(posts);
		console.log(
			JSON.stringify({ payouts: created.length, seconds, perSecond: created.length / seconds, answered429: limited, perSecondPeak }),
		);
		expect(limited).toBeLessThanOrEqual(ALLOWED_429);
	});
	it("the governor paces the account: a batch of payouts leaves at the live-mode rate, never together", async () => {
		// A second app, connected with a live key to a local Stripe that takes 3 requests a second (429 above it).
		const app = await h.admin("POST", "/apps", { name: "paced", landingurl: "https://shop.example.com/" });
		expect(app.status).toBe(201);
		const appid: string = app.body.appid;
		const creds = { apikey: app.body.apikey, privatekey: app.body.privatekey };
		const campaign = await h.admin("POST", `/apps/${appid}/campaigns`, {
			campaignname: "10% paid into Stripe, approved by hand",
			distribution: "Stripe",
			currency: "USD",
			autoapprove: false,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
		});
		expect(campaign.status).toBe(201);
		const connected = await h.admin("PATCH", `/apps/${appid}`, {
			stripe: { secretkey: "sk_live_e2eGovernorPaced42", webhooksecret: "whsec_e2eGovernorPaced0000001", apiurl: paced.url },
		});
		expect(connected.status).toBe(200);
		const api = (operation: string, body: Record<string, unknown>) => h.api(operation, { ...creds, ...body });
		const referrer = (await api("register", { email: "paced@example.com", paymentcustomerid: "cus_paced" })).body;
		await pool(
			Array.from({ length: PACED_PAYOUTS }, (_, k) => async () => {
				const friend = await api("register", { email: `paced.f${k}@example.com`, referrercode: referrer.referralcode });
				expect(friend).toMatchObject({ status: 200 });
				const conversion = await api("registerconversionevent", {
					userkey: friend.body.userkey,
					eventname: "Transaction",
					transactionvalue: "100",
					customid: `paced-${k}`,
					growthhack: "SaaS_Referrals",
				});
				expect(conversion).toMatchObject({ status: 200 });
			}),
			10,
		);
		const ids = Array.from({ length: PACED_PAYOUTS }, (_, k) => `${referrer.userkey}-${k + 1}`);
		const started = Date.now();
		const approved = await api("changerewardstatus", {
			rewardslist: ids.map((rewarddtlid) => ({ rewarddtlid, rewardstatus: "Approved" })),
		});
		expect(approved.status).toBe(200);
		// Paid or not in time, the pacing is judged first: unpaced, the 429s' backoff may outlast the wait.
		const allPaid = await h
			.until("every paced reward paid", async () => (paced.created.length === PACED_PAYOUTS ? true : undefined), 180_000)
			.then(
				() => true,
				() => false,
			);
		const seconds = (Date.now() - started) / 1000;
		const posts = paced.calls.filter((c) => c.method === "POST");
		const limited = posts.filter((c) => c.status === 429).length;
		const peak = peakPerSecond(posts);
		console.log(JSON.stringify({ paced: PACED_PAYOUTS, rate: PACED_RATE, allPaid, seconds, answered429: limited, perSecondPeak: peak }));
		// Paced at 2 a second: never more in a second than the local Stripe's 3 takes, so it never answers 429. Two
		// requests stalled by the machine into a neighbour's second are allowed for (PACED_STALLS: one was seen right
		// after the 1,000 approvals, on the shared machine); unpaced, the
		// batch of 10 leaves together (a peak of 10, dozens of 429s).
		expect(peak).toBeLessThanOrEqual(PACED_LIMIT + PACED_STALLS);
		expect(limited).toBeLessThanOrEqual(PACED_STALLS);
		// Exactly once, one key each.
		expect(allPaid).toBe(true);
		expect(new Set(paced.created.map((t) => t.rewarddtlid)).size).toBe(PACED_PAYOUTS);
		expect(new Set(paced.created.map((t) => t.idempotencyKey)).size).toBe(PACED_PAYOUTS);
	});
});
