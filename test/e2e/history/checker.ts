import type { Op, Plan } from "./generator";

/**
 * The history checker's verdict, pure: from the plan, what every client sent
 * and was answered (unknown outcomes included) and the state read once the
 * system is quiet, the invariants of issue 31 that do not hold. Amounts in
 * minor units (cents) throughout.
 */

/** One request of the history. `status` 0: no answer (timeout, connection cut, the service killed): unknown outcome. */
export interface Entry {
	client: number;
	/** The plan's operation index; -1 for the drain's and the operator's requests. */
	index: number;
	op: Op;
	status: number;
	body: Record<string, any> | null;
	start: number;
	end: number;
}

export interface RewardState {
	rewarddtlid: string;
	referrer: number;
	friend: number;
	/** A wallet reward (the wallet campaign), else a Stripe one. */
	wallet: boolean;
	status: string;
	/** Its worth after reversals. */
	reward: number;
	reversed: number;
	/** The admin projection's payout summary (null: none). */
	payoutstate: string | null;
}

export interface BalanceState {
	referrer: number;
	total: number;
	pending: number;
	approved: number;
	claimed: number;
}

export interface StripeState {
	/** Balance transactions Stripe created (not replays). */
	created: { amount: number; rewarddtlid: string; customer: string; idempotencyKey: string | null }[];
	/** Every amount each Idempotency-Key was sent with. */
	keyAmounts: Map<string, Set<number>>;
}

export interface World {
	rewards: RewardState[];
	balances: BalanceState[];
	stripe: StripeState;
}

export interface Violation {
	rule:
		| "one-amount-per-key"
		| "net-equals-owed"
		| "one-conversion-per-customid"
		| "refund-applied-once"
		| "balance-equals-rewards"
		| "no-payout-sending";
	detail: string;
}

const seqOf = (rewarddtlid: string) => Number(/-(\d+)$/.exec(rewarddtlid)?.[1] ?? Number.NaN);
const ok = (e: Entry) => e.status >= 200 && e.status < 300;
const HELD = new Set(["UnderReview", "Suspicious"]);

/** The sums some subset of `amounts` makes (small sets: the requests cut off by the kill). */
export function subsetSums(amounts: number[]): Set<number> {
	let sums = new Set([0]);
	for (const a of amounts) sums = new Set([...sums, ...[...sums].map((s) => s + a)]);
	return sums;
}

export function check(plan: Plan, history: Entry[], world: World): Violation[] {
	return [
		...keys(world),
		...netOwed(world),
		...conversions(plan, history, world),
		...refunds(plan, history, world),
		...balances(plan, history, world),
		...payoutStates(world),
	];
}

function keys(world: World): Violation[] {
	return [...world.stripe.keyAmounts]
		.filter(([, amounts]) => amounts.size !== 1)
		.map(([key, amounts]) => ({ rule: "one-amount-per-key" as const, detail: `${key} sent with ${[...amounts].join(", ")}` }));
}

/** For every Stripe reward, Stripe's net (credits negative) is minus what the reward owes; no transaction names another reward. */
function netOwed(world: World): Violation[] {
	const out: Violation[] = [];
	const net = new Map<string, number>();
	for (const t of world.stripe.created) net.set(t.rewarddtlid, (net.get(t.rewarddtlid) ?? 0) + t.amount);
	const stripeRewards = new Map(world.rewards.filter((r) => !r.wallet).map((r) => [r.rewarddtlid, r]));
	for (const [id, paid] of net)
		if (!stripeRewards.has(id)) out.push({ rule: "net-equals-owed", detail: `Stripe net ${paid} for ${id}, no Stripe reward of that id` });
	for (const r of stripeRewards.values()) {
		const got = net.get(r.rewarddtlid) ?? 0;
		// A held reward keeps what was booked (docs/stripe.md): paid or not, never something else.
		const owed = r.status === "Rejected" ? [0] : HELD.has(r.status) ? [0, r.reward] : [r.reward];
		if (!owed.some((o) => got === -o))
			out.push({ rule: "net-equals-owed", detail: `${r.rewarddtlid} (${r.status}) owes ${owed.join(" or ")}, Stripe's net ${got}` });
	}
	return out;
}

function conversions(plan: Plan, history: Entry[], world: World): Violation[] {
	const out: Violation[] = [];
	const byCustomid = new Map<string, { friend: number; answers: Entry[] }>();
	for (const e of history) {
		if (e.op.kind !== "convert") continue;
		const c = byCustomid.get(e.op.customid) ?? { friend: e.op.friend, answers: [] };
		c.answers.push(e);
		byCustomid.set(e.op.customid, c);
	}
	const recorded = new Map<number, number>();
	const maybe = new Map<number, number>();
	for (const [customid, { friend, answers }] of byCustomid) {
		const firsts = answers.filter((e) => e.status === 200 && e.body?.duplicate === false).length;
		if (firsts > 1) out.push({ rule: "one-conversion-per-customid", detail: `${customid}: ${firsts} answers said it was new` });
		const map = answers.some((e) => e.status === 200) ? recorded : maybe;
		map.set(friend, (map.get(friend) ?? 0) + 1);
	}
	for (let friend = 0; friend < plan.friends; friend++) {
		const mine = world.rewards.filter((r) => r.friend === friend);
		const wallet = mine.filter((r) => r.wallet).length;
		const low = recorded.get(friend) ?? 0;
		const high = low + (maybe.get(friend) ?? 0);
		if (wallet < low || wallet > high)
			out.push({ rule: "one-conversion-per-customid", detail: `friend ${friend}: ${wallet} wallet rewards, expected ${low}..${high}` });
		const paid = history.some((e) => e.op.kind === "pay" && e.op.friend === friend && ok(e));
		const stripe = mine.filter((r) => !r.wallet).length;
		if (stripe > 1 || (paid && stripe !== 1))
			out.push({
				rule: "one-conversion-per-customid",
				detail: `friend ${friend}: ${stripe} Stripe rewards for one invoice (paid: ${paid})`,
			});
	}
	return out;
}

/** A Stripe reward not rejected by hand is reversed by exactly its charge's refunded total (the largest, in any order). */
function refunds(plan: Plan, history: Entry[], world: World): Violation[] {
	const out: Violation[] = [];
	const rejectedByHand = new Set(
		history
			.filter((e) => e.op.kind === "status" && e.op.status === "Rejected")
			.map((e) => e.op.kind === "status" && `${e.op.referrer}-${e.op.seq}`),
	);
	for (const r of world.rewards) {
		if (r.wallet || rejectedByHand.has(`${r.referrer}-${seqOf(r.rewarddtlid)}`)) continue;
		const amount = plan.invoices.get(r.friend);
		if (amount === undefined) continue;
		const worth = amount / 10;
		const sent = history.filter((e) => e.op.kind === "refund" && e.op.friend === r.friend);
		const acked = Math.max(0, ...sent.filter(ok).map((e) => (e.op.kind === "refund" ? e.op.total : 0)));
		// What was acknowledged must be applied; a total sent but never acknowledged may be (Stripe would resend it).
		const allowed = new Set(
			[0, ...sent.map((e) => (e.op.kind === "refund" ? e.op.total : 0))].filter((t) => t >= acked).map((t) => Math.min(t, amount) / 10),
		);
		if (!allowed.has(r.reversed) || r.reward + r.reversed !== worth)
			out.push({
				rule: "refund-applied-once",
				detail: `${r.rewarddtlid} (friend ${r.friend}, paid ${amount}): reversed ${r.reversed}, worth ${r.reward}; expected reversed in ${[...allowed].join("/")} of ${worth}`,
			});
		const full = r.reversed === worth;
		if (full !== (r.status === "Rejected"))
			out.push({ rule: "refund-applied-once", detail: `${r.rewarddtlid}: reversed ${r.reversed} of ${worth} but ${r.status}` });
	}
	return out;
}

/** Every wallet balance: its rewards (not rejected) in total, split into pending + approved + claimed, claimed what was redeemed. */
function balances(plan: Plan, history: Entry[], world: World): Violation[] {
	const out: Violation[] = [];
	for (let referrer = 0; referrer < plan.referrers; referrer++) {
		const b = world.balances.find((x) => x.referrer === referrer) ?? { referrer, total: 0, pending: 0, approved: 0, claimed: 0 };
		const rewards = world.rewards.filter((r) => r.wallet && r.referrer === referrer && r.status !== "Rejected");
		const sum = rewards.reduce((s, r) => s + r.reward, 0);
		if (b.total !== sum) out.push({ rule: "balance-equals-rewards", detail: `referrer ${referrer}: total ${b.total}, its rewards ${sum}` });
		if (b.total !== b.pending + b.approved + b.claimed || b.approved < 0)
			out.push({ rule: "balance-equals-rewards", detail: `referrer ${referrer}: ${JSON.stringify(b)} does not add up` });
		const redeems = history.filter((e) => e.op.kind === "redeem" && e.op.referrer === referrer);
		const amountOf = (e: Entry) => (e.op.kind === "redeem" ? e.op.amount : 0);
		const sure = redeems.filter((e) => e.status === 200).reduce((s, e) => s + amountOf(e), 0);
		const unknown = redeems.filter((e) => e.status === 0 || e.status >= 500).map(amountOf);
		if (!subsetSums(unknown).has(b.claimed - sure))
			out.push({
				rule: "balance-equals-rewards",
				detail: `referrer ${referrer}: claimed ${b.claimed}, redeemed ${sure} answered and ${unknown.join("+") || "nothing"} unknown`,
			});
	}
	return out;
}

function payoutStates(world: World): Violation[] {
	return world.rewards
		.filter((r) => !r.wallet && (r.payoutstate === "sending" || r.payoutstate === "due"))
		.map((r) => ({ rule: "no-payout-sending" as const, detail: `${r.rewarddtlid} left ${r.payoutstate} (${r.status})` }));
}
