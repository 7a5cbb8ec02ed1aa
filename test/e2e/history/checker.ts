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
	/** The admin projection's comment: why a payout failed, when it did. */
	comment?: string | null;
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
	/** Every balance transaction request in arrival order: its key, reward, answer (-1: applied, cut), Stripe's code and request id. */
	calls?: {
		key: string | null;
		rewarddtlid: string;
		status: number;
		code: string | null;
		requestId: string;
		at?: number;
		customer?: string;
	}[];
	/** The service's lookups of a customer's balance transactions (an unknown payout resolved from Stripe's record, issue 47). */
	lookups?: { customer: string; at: number }[];
	/** When the service was up again after the kill: a webhook queued before may come only with the outbox sweep, minutes later. */
	restartedAt?: number;
	/** Every `Authorization` this side's local Stripe was sent (one: the side's own secret key). */
	authorizations?: string[];
	/** The service's `reward.payout_failed` webhooks of this side (`livemode`) as the receiver got them. */
	failedHooks?: { rewarddtlid: string; code: string; reason: string }[];
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
		| "no-payout-sending"
		| "retryable-retried"
		| "refusal-explained"
		| "nothing-crosses";
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

/**
 * `secretkey`: the side's Stripe key (the seed's live app or its test twin, issue 47); given, its local Stripe
 * must have been sent that key only.
 */
export function check(plan: Plan, history: Entry[], world: World, secretkey?: string): Violation[] {
	return [
		...crossings(plan, world, secretkey),
		...keys(world),
		...netOwed(world),
		...conversions(plan, history, world),
		...refunds(plan, history, world),
		...balances(plan, history, world),
		...payoutStates(world),
		...retried(world),
		...refusals(world),
	];
}

/** Stripe's answers a retry under the same key may change: 5xx, 409 (key in use), 429 (rate limit), none (-1: cut). */
const retryable = (status: number) => status === -1 || status === 409 || status === 429 || status >= 500;
/** A refusal for good: Stripe ran the request and remembers the answer under its key (402, 404, ...). */
const final = (status: number) => status >= 400 && status < 500 && !retryable(status);

/**
 * Each key that reached Stripe got, in the end, an answer for good (2xx or a
 * refusal Stripe remembers): an unanswered, rate-limited or 5xx request was
 * sent again under the same key until one came. The same amount is
 * `one-amount-per-key`; a 400 (a key reused with other parameters) is there too.
 */
function retried(world: World): Violation[] {
	const out: Violation[] = [];
	const byKey = new Map<string, number[]>();
	const last = new Map<string, { customer: string; at: number }>();
	for (const c of world.stripe.calls ?? []) {
		if (!c.key) continue;
		byKey.set(c.key, [...(byKey.get(c.key) ?? []), c.status]);
		last.set(c.key, { customer: c.customer ?? "", at: c.at ?? 0 });
	}
	// A key never answered that the service looked up in its customer's balance transactions after its last attempt
	// was resolved from Stripe's record instead of sent again (an unknown outcome, docs/stripe.md): that is its answer.
	const lookedUp = (key: string) => {
		const l = last.get(key);
		return l !== undefined && (world.stripe.lookups ?? []).some((x) => x.customer === l.customer && x.at > l.at);
	};
	for (const [key, statuses] of byKey) {
		if (!statuses.some((s) => (s >= 200 && s < 300) || final(s)) && !lookedUp(key))
			out.push({ rule: "retryable-retried", detail: `${key} answered ${statuses.join(", ")} and never sent again to an answer for good` });
		if (statuses.includes(400)) out.push({ rule: "one-amount-per-key", detail: `${key} reused with other parameters (Stripe's 400)` });
	}
	return out;
}

/**
 * Each refusal for good is the payout's recorded failure: a
 * `reward.payout_failed` webhook of its reward with Stripe's code and one of
 * the key's request ids (never Stripe's text); and no payout failed that
 * Stripe did not refuse (a 429 or a 500 recorded as final).
 */
function refusals(world: World): Violation[] {
	const out: Violation[] = [];
	const refused = new Map<string, { rewarddtlid: string; codes: Set<string>; requestIds: string[] }>();
	for (const c of world.stripe.calls ?? []) {
		if (!c.key || !final(c.status) || c.status === 400) continue;
		const r = refused.get(c.key) ?? { rewarddtlid: c.rewarddtlid, codes: new Set<string>(), requestIds: [] };
		r.codes.add(c.code ?? `http_${c.status}`);
		r.requestIds.push(c.requestId);
		refused.set(c.key, r);
	}
	const hooks = world.stripe.failedHooks ?? [];
	const names = (h: { code: string; reason: string }, r: { codes: Set<string>; requestIds: string[] }) =>
		r.codes.has(h.code) && r.requestIds.some((id) => new RegExp(`\\b${id}\\b`).test(h.reason));
	// A refusal answered before the restart may have its webhook lost in the kill: the outbox sweep sends it
	// 2-3 minutes later (outbox/sweep.ts), after the quiet phase; its reward's comment is judged instead.
	const late = (key: string) =>
		(world.stripe.calls ?? []).some(
			(c) => c.key === key && final(c.status) && c.at !== undefined && c.at <= (world.stripe.restartedAt ?? Number.NEGATIVE_INFINITY),
		);
	for (const [key, r] of refused)
		if (!late(key) && !hooks.some((h) => h.rewarddtlid === r.rewarddtlid && names(h, r)))
			out.push({
				rule: "refusal-explained",
				detail: `${key} refused (${[...r.codes].join(", ")}, ${r.requestIds.join(", ")}): no reward.payout_failed naming them`,
			});
	const ofReward = [...refused.values()];
	for (const h of hooks)
		if (!ofReward.some((r) => r.rewarddtlid === h.rewarddtlid && names(h, r)))
			out.push({
				rule: "refusal-explained",
				detail: `${h.rewarddtlid}: payout_failed (${h.code}) that Stripe did not refuse: ${h.reason}`,
			});
	return out;
}

/**
 * A reward whose payout failed says why (its comment: Stripe's code and
 * request id of a refusal of that reward). Judged while failed, before the
 * operator's retry clears it (run.ts's quiet phase).
 */
export function failuresExplained(world: World): Violation[] {
	const calls = (world.stripe.calls ?? []).filter((c) => final(c.status) && c.status !== 400);
	return world.rewards
		.filter((r) => !r.wallet && r.payoutstate === "failed" && !settledRejected(world, r))
		.filter(
			(r) =>
				!calls.some(
					(c) =>
						c.rewarddtlid === r.rewarddtlid &&
						r.comment?.includes(c.code ?? "") &&
						new RegExp(`\\b${c.requestId}\\b`).test(r.comment ?? ""),
				),
		)
		.map((r) => ({ rule: "refusal-explained" as const, detail: `${r.rewarddtlid} failed, its comment: ${JSON.stringify(r.comment)}` }));
}

/**
 * Test mode and live mode stay apart (issue 47): a side's local Stripe was called with the side's key only (no
 * payout of a test reward through the live connection, nor the reverse), and no friend has a Stripe reward that
 * this side never paid an invoice of (the two sides' users share Stripe customer ids: the other side's
 * `invoice.paid` applied here would land on one). Wallet rewards from the other side's keys break
 * `one-conversion-per-customid`, the other side's payouts `net-equals-owed` and `refusal-explained`.
 */
function crossings(plan: Plan, world: World, secretkey: string | undefined): Violation[] {
	const out: Violation[] = [];
	if (secretkey !== undefined)
		for (const a of world.stripe.authorizations ?? [])
			if (a !== `Bearer ${secretkey}`) out.push({ rule: "nothing-crosses", detail: `the local Stripe was sent ${a || "no key"}` });
	for (const r of world.rewards)
		if (!r.wallet && !plan.invoices.has(r.friend))
			out.push({
				rule: "nothing-crosses",
				detail: `${r.rewarddtlid}: a Stripe reward of friend ${r.friend}, who paid no invoice on this side`,
			});
	return out;
}

/**
 * A Rejected reward of which Stripe holds nothing owes nothing and has nothing to retry: its payout state may still
 * say `failed` (a refused credit, then a retry cancelled unsent by a full refund), and its comment the refund's
 * reason, with nothing for the operator to act on (docs/stripe.md, "History checker").
 */
export function settledRejected(world: World, r: RewardState): boolean {
	const net = world.stripe.created.filter((t) => t.rewarddtlid === r.rewarddtlid).reduce((sum, t) => sum + t.amount, 0);
	return r.status === "Rejected" && net === 0;
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

/**
 * A Stripe reward not rejected by hand is reversed by exactly its charge's refunded total (the largest, in any order);
 * a lost dispute of the charge counts as its whole amount refunded, a won one as nothing.
 */
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
		// A lost dispute (issue 47) reverses the payment as a full refund: a refunded total of the whole amount.
		const totalOf = (e: Entry) => (e.op.kind === "refund" ? e.op.total : e.op.kind === "dispute" && e.op.state === "lost" ? amount : 0);
		const sent = history.filter((e) => (e.op.kind === "refund" || e.op.kind === "dispute") && e.op.friend === r.friend);
		const acked = Math.max(0, ...sent.filter(ok).map(totalOf));
		// What was acknowledged must be applied; a total sent but never acknowledged may be (Stripe would resend it).
		const allowed = new Set([0, ...sent.map(totalOf)].filter((t) => t >= acked).map((t) => Math.min(t, amount) / 10));
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
		.filter((r) => !r.wallet && (r.payoutstate === "sending" || r.payoutstate === "due" || r.payoutstate === "unknown"))
		.map((r) => ({
			rule: "no-payout-sending" as const,
			detail: `${r.rewarddtlid} left ${r.payoutstate} (${r.status})${r.comment ? `: ${JSON.stringify(r.comment)}` : ""}`,
		}));
}
