import type { FakeStripe } from "../fake-stripe";
import type { BalanceState, RewardState, World } from "./checker";
import type { Plan } from "./generator";
import { type Answer, admin, type Live } from "./service";

/**
 * The state the checker judges, read the way the product and its operators
 * read it: each referrer's rewards from its ledger (getfriendsandrewards),
 * its wallet balance (getuserbalance), the payout summary from the admin
 * API's rewards list, and what the local Stripe recorded.
 */

/**
 * One side of the seed's app as set up: keys, the wallet campaign, its users by index (friend `i`'s referrer is
 * `i % referrers`). `test`: the app's test twin (test keys, its own Stripe connection and local Stripe, issue 47),
 * whose users share the live users' emails and Stripe customer ids, so anything crossing sides lands on a user.
 */
export interface SeedApp {
	side: "live" | "test";
	appid: string;
	creds: { apikey: string; privatekey: string };
	wallet: number;
	referrers: { userkey: string; customer: string; code: string }[];
	friends: { userkey: string; customer: string }[];
}

const cents = (value: unknown) => Math.round(Number(value ?? 0) * 100);

/** The balance record of `campaignid` inside getuserbalance's nesting (unit, growth hack, campaign). */
function campaignRecord(userbalance: any[], campaignid: number): Record<string, unknown> | undefined {
	for (const unit of userbalance ?? [])
		for (const hack of unit.growthhacks ?? []) for (const c of hack.campaigns ?? []) if (Number(c.campaignid) === campaignid) return c;
	return undefined;
}

export async function readWorld(
	live: Live,
	plan: Plan,
	w: SeedApp,
	fake: FakeStripe,
	api: (op: string, body: object) => Promise<Answer>,
	restartedAt: number,
	/** The service's webhooks: both sides deliver to the app's one webhook URL (the live local Stripe's), told apart by `livemode`. */
	hooks: FakeStripe["hooks"],
): Promise<World> {
	const mode = w.side === "test" ? "&mode=test" : "";
	const friendOf = new Map(w.friends.map((f, i) => [f.userkey, i]));
	const payoutstate = new Map<string, string | null>();
	const comment = new Map<string, string | null>();
	let cursor: string | null = null;
	do {
		const page: Answer = await admin(
			live,
			"GET",
			`/apps/${w.appid}/rewards?limit=200${mode}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
		);
		if (page.status !== 200) throw new Error(`admin rewards list answered ${page.status} ${JSON.stringify(page.body)}`);
		for (const r of page.body?.rewards ?? []) {
			payoutstate.set(r.rewarddtlid, r.payoutstate ?? null);
			comment.set(r.rewarddtlid, r.comment ?? null);
		}
		cursor = page.body?.nextcursor ?? null;
	} while (cursor);
	const rewards: RewardState[] = [];
	const balances: BalanceState[] = [];
	for (let referrer = 0; referrer < plan.referrers; referrer++) {
		const userkey = w.referrers[referrer]!.userkey;
		const friends = await api("getfriendsandrewards", { userkey, pagesize: 500 });
		if (friends.status !== 200) throw new Error(`getfriendsandrewards answered ${friends.status} ${JSON.stringify(friends.body)}`);
		for (const f of friends.body?.friends ?? [])
			for (const r of f.earnedrewards ?? [])
				rewards.push({
					rewarddtlid: r.rewarddtlid,
					referrer,
					friend: friendOf.get(f.userkey) ?? -1,
					wallet: Number(r.campaignid) === w.wallet,
					status: r.rewardstatus,
					reward: cents(r.reward),
					reversed: cents(r.reversedamount),
					payoutstate: payoutstate.get(r.rewarddtlid) ?? null,
					comment: comment.get(r.rewarddtlid) ?? null,
				});
		const balance = await api("getuserbalance", { userkey, campaignid: String(w.wallet) });
		if (balance.status !== 200) throw new Error(`getuserbalance answered ${balance.status} ${JSON.stringify(balance.body)}`);
		const b = campaignRecord(balance.body?.userbalance, w.wallet);
		balances.push({
			referrer,
			total: cents(b?.total),
			pending: cents(b?.pending),
			approved: cents(b?.approved),
			claimed: cents(b?.claimed),
		});
	}
	return {
		rewards,
		balances,
		stripe: {
			created: fake.created.map((t) => ({
				amount: t.amount,
				rewarddtlid: t.rewarddtlid,
				customer: t.customer,
				idempotencyKey: t.idempotencyKey,
			})),
			keyAmounts: fake.keyAmounts,
			calls: fake.calls
				.filter((c) => c.method === "POST" && c.path.endsWith("/balance_transactions"))
				.map((c) => ({
					customer: c.path.split("/")[3] ?? "",
					key: c.idempotencyKey,
					rewarddtlid: c.form["metadata[rewarddtlid]"] ?? "",
					status: c.status,
					code: c.code,
					requestId: c.requestId,
					at: c.at,
				})),
			authorizations: [...new Set(fake.calls.map((c) => c.authorization ?? ""))],
			lookups: fake.calls
				.filter((c) => c.method === "GET" && c.path.endsWith("/balance_transactions"))
				.map((c) => ({ customer: c.path.split("/")[3] ?? "", at: c.at })),
			restartedAt,
			failedHooks: hooks
				.filter((h) => h.type === "reward.payout_failed" && h.livemode === (w.side === "live"))
				.map((h) => ({
					rewarddtlid: String(h.data.reward?.rewarddtlid ?? ""),
					code: String(h.data.code ?? ""),
					reason: String(h.data.reason ?? ""),
				})),
		},
	};
}
