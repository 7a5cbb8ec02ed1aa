import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

let h: Harness;

beforeAll(async () => {
	// GOVERNOR_RATE (diagnosis only): the governor's test-mode rate instead of its default, e.g. 1000 to see the burst unpaced.
	// The re-drive after a minute (3 s in the other Stripe tests): sooner, it would send again payouts still in the
	// governor's queue, each repeat taking a moment of the account's rate.
	const vars: Record<string, string> = {
		STRIPE_REDRIVE_AFTER_MS: "60000",
		...(process.env.GOVERNOR_RATE ? { STRIPE_RATE_TEST: process.env.GOVERNOR_RATE } : {}),
	};
	h = await startHarness("stripe-governor", { autoapprove: false }, { limit: { perSecond: LIMIT }, vars });
}, 300_000);

afterAll(async () => {
	await h?.stop();
});

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
		const perSecondPeak = Math.max(...posts.map((c) => posts.filter((d) => d.at > c.at - 1000 && d.at <= c.at).length));
		console.log(
			JSON.stringify({ payouts: created.length, seconds, perSecond: created.length / seconds, answered429: limited, perSecondPeak }),
		);
		expect(limited).toBeLessThanOrEqual(ALLOWED_429);
	});
});
