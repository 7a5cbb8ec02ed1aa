import { type FakeStripe, startFakeStripe } from "../fake-stripe";
import { check, type Entry, failuresExplained, settledRejected, type Violation } from "./checker";
import { generate, type Op, type Plan, testPlanOptions } from "./generator";
import { type Answer, admin, chargeRefundedEvent, deliver, disputeEvent, invoicePaidEvent, type Live, request } from "./service";
import { SECRETS, STRIPE_KEYS, setUp } from "./setup";
import { readWorld, type SeedApp } from "./world";

/**
 * One seed of the history checker against a running service: an app with a
 * Stripe campaign (10 % of a payment to the referrer, paid into Stripe) and
 * a wallet campaign (5 USD per Purchase), in live mode and, beside it, its
 * test twin with a plan and a local Stripe of its own (setup.ts; issue 47),
 * `clients` concurrent clients running both plans interleaved, the service
 * killed and restarted when the plan says, then
 * the drain (Stripe resends what was not answered 2xx, clients resend
 * conversions without an answer), and the checks once the system is quiet.
 */

export interface SeedOptions {
	ops: number;
	clients: number;
	/** How long the quiet phase may take before what still fails is reported. */
	quietMs: number;
}

export interface SeedResult {
	seed: number;
	ops: number;
	requests: number;
	unknown: number;
	stripeCalls: number;
	injected5xx: number;
	cut: number;
	/** 429 rate_limit answers (injected), 409 idempotency_key_in_use (a key sent again while its request ran). */
	rateLimited: number;
	inUse: number;
	/** Refusals for good (402 balance_insufficient, 404 resource_missing), first answers only (not replays). */
	refused: number;
	/** The service's lookups of a customer's balance transactions: unknown outcomes resolved from Stripe's record (issue 47). */
	lookups: number;
	/** Dispute events in the live plan (issue 47). */
	disputes: number;
	/** The test-mode tenant's figures (the app's test twin, its own local Stripe; issue 47). */
	test: { ops: number; requests: number; unknown: number; disputes: number; stripeCalls: number; lookups: number };
	restartMs: number;
	/** Set-up (app, campaigns, users), the plan's operations (with the restart), the drain and the quiet phase. */
	phases: { setupMs: number; runMs: number; drainMs: number; quietMs: number };
	ms: number;
	violations: Violation[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Side = "live" | "test";
/** The plan's operations and the test tenant's, interleaved: one test-side operation after every `every` live ones. */
interface Step {
	side: Side;
	index: number;
	op: Op;
}

function interleave(plans: Record<Side, Plan>): { steps: Step[]; killAt: number } {
	const steps: Step[] = [];
	const every = Math.max(1, Math.floor(plans.live.ops.length / Math.max(1, plans.test.ops.length)));
	let t = 0;
	let killAt = 0;
	plans.live.ops.forEach((op, index) => {
		if (index === plans.live.killAt) killAt = steps.length;
		steps.push({ side: "live", index, op });
		if ((index + 1) % every === 0 && t < plans.test.ops.length) steps.push({ side: "test", index: t, op: plans.test.ops[t++]! });
	});
	for (; t < plans.test.ops.length; t++) steps.push({ side: "test", index: t, op: plans.test.ops[t]! });
	return { steps, killAt };
}

const CHAOS = { fail5xx: 0.1, late: 0.05, lateMs: 400, maxLatencyMs: 60, rateLimit: 0.05, refuse: 0.04, hang: 0.03, hangMs: 2_500 };

export async function runSeed(live: Live, seed: number, options: SeedOptions): Promise<SeedResult> {
	const t0 = Date.now();
	const plans = { live: generate(seed, { ops: options.ops }), test: generate(seed, testPlanOptions(options.ops)) };
	// hang: a key never answered, past the client's timeout (STRIPE_TIMEOUT_MS, service.ts), until its lookup (issue 47).
	// The test twin's local Stripe misbehaves the same way, on a schedule of its own.
	const [liveFake, testFake] = await Promise.all([
		startFakeStripe({ seed, ...CHAOS }),
		startFakeStripe({ seed: seed + 1_000_003, ...CHAOS }),
	]);
	const fakes: Record<Side, FakeStripe> = { live: liveFake, test: testFake };
	const tag = `h${seed}${Date.now().toString(36)}`;
	try {
		const apps = await setUp(live, plans, fakes, tag);
		const t1 = Date.now();
		const histories: Record<Side, Entry[]> = { live: [], test: [] };
		const apis = {
			live: (op: string, body: object) => request(live, "POST", `/saas/v1_0/${op}`, { ...apps.live.creds, ...body }),
			test: (op: string, body: object) => request(live, "POST", `/saas/v1_0/${op}`, { ...apps.test.creds, ...body }),
		};

		const send = (side: Side, op: Op): Promise<Answer>[] => {
			const w = apps[side];
			const api = apis[side];
			const plan = plans[side];
			const refkey = (r: number) => w.referrers[r]!.userkey;
			const mode = side === "test" ? "?mode=test" : "";
			// The test twin's Stripe objects have ids of their own (Stripe's ids are unique across modes), its customers not.
			const eventTag = side === "test" ? `${tag}t` : tag;
			const signed = (event: Record<string, unknown>, twice: boolean) =>
				Array.from({ length: twice ? 2 : 1 }, () =>
					deliver(live, side === "test" ? `${w.appid}_test` : w.appid, SECRETS[side], event, side === "live"),
				);
			switch (op.kind) {
				case "convert":
					return [
						api("registerconversionevent", {
							userkey: w.friends[op.friend]!.userkey,
							eventname: "Purchase",
							customid: op.customid,
							growthhack: "SaaS_Referrals",
							transactionvalue: 50,
							campaignid: w.wallet,
						}),
					];
				case "pay":
					return signed(invoicePaidEvent(eventTag, op.friend, w.friends[op.friend]!.customer, plan.invoices.get(op.friend)!), op.twice);
				case "refund": {
					const amount = plan.invoices.get(op.friend)!;
					return signed(chargeRefundedEvent(eventTag, op.friend, w.friends[op.friend]!.customer, amount, op.total), op.twice);
				}
				case "status":
					return [
						api("changerewardstatus", { rewardslist: [{ rewarddtlid: `${refkey(op.referrer)}-${op.seq}`, rewardstatus: op.status }] }),
					];
				case "redeem":
					return [api("redeemrewards", { userkey: refkey(op.referrer), amount: op.amount / 100, rewardunit: "USD", campaignid: w.wallet })];
				case "retry":
					return [admin(live, "POST", `/apps/${w.appid}/users/${refkey(op.referrer)}/payouts/retry${mode}`)];
				case "dispute":
					return signed(disputeEvent(eventTag, op.friend, plan.invoices.get(op.friend)!, op.state), op.twice);
			}
		};
		const perform = async (side: Side, client: number, index: number, op: Op) => {
			const start = Date.now();
			const answers = await Promise.all(send(side, op));
			const end = Date.now();
			for (const a of answers) histories[side].push({ client, index, op, status: a.status, body: a.body, start, end });
			return answers;
		};

		// The clients: each takes the next step; the one reaching killAt crashes the service, the others wait.
		const { steps, killAt } = interleave(plans);
		let next = 0;
		let gate: Promise<unknown> = Promise.resolve();
		let restartMs = 0;
		let restartedAt = 0;
		const client = async (id: number) => {
			for (;;) {
				await gate;
				const index = next++;
				if (index >= steps.length) return;
				if (index === killAt) {
					// In-flight requests of the other clients are cut: their outcomes are unknown.
					gate = live.crash().then((ms) => {
						restartMs = ms;
						restartedAt = Date.now();
					});
					await gate;
				}
				const step = steps[index]!;
				await perform(step.side, id, step.index, step.op);
			}
		};
		await Promise.all(Array.from({ length: options.clients }, (_, id) => client(id)));

		const t2 = Date.now();
		await Promise.all((["live", "test"] as const).map((side) => drain(plans[side], histories[side], (...a) => perform(side, ...a))));
		const t3 = Date.now();
		const sides = (["live", "test"] as const).map((side) => ({
			side,
			plan: plans[side],
			w: apps[side],
			fake: fakes[side],
			history: histories[side],
			api: apis[side],
		}));
		const violations = await quiet(live, sides, liveFake.hooks, options.quietMs, restartedAt);
		const phases = { setupMs: t1 - t0, runMs: t2 - t1, drainMs: t3 - t2, quietMs: Date.now() - t3 };
		const count = (p: (c: FakeStripe["calls"][number]) => boolean) => liveFake.calls.filter(p).length;
		const lookups = (f: FakeStripe) => f.calls.filter((c) => c.method === "GET" && c.path.endsWith("/balance_transactions")).length;
		const history = histories.live;
		return {
			seed,
			ops: plans.live.ops.length,
			requests: history.length,
			unknown: history.filter((e) => e.status === 0).length,
			disputes: plans.live.ops.filter((op) => op.kind === "dispute").length,
			stripeCalls: liveFake.calls.length,
			injected5xx: count((c) => c.status === 500),
			cut: count((c) => c.status === -1),
			rateLimited: count((c) => c.status === 429),
			inUse: count((c) => c.status === 409),
			refused: count((c) => (c.status === 402 || c.status === 404) && !c.replayed && c.path.endsWith("/balance_transactions")),
			lookups: lookups(liveFake),
			test: {
				ops: plans.test.ops.length,
				requests: histories.test.length,
				unknown: histories.test.filter((e) => e.status === 0).length,
				disputes: plans.test.ops.filter((op) => op.kind === "dispute").length,
				stripeCalls: testFake.calls.length,
				lookups: lookups(testFake),
			},
			restartMs,
			phases,
			ms: Date.now() - t0,
			violations,
		};
	} finally {
		await Promise.all([liveFake.close(), testFake.close()]);
	}
}

/**
 * Stripe resends every event until it is answered 2xx; a client resends a
 * conversion it got no answer for (its customid makes that safe). Both are
 * history too.
 */
async function drain(plan: Plan, history: Entry[], perform: (client: number, index: number, op: Op) => Promise<Answer[]>) {
	const acked = (op: Op) =>
		history.some((e) => e.status >= 200 && e.status < 300 && JSON.stringify({ ...e.op, twice: 0 }) === JSON.stringify({ ...op, twice: 0 }));
	const recorded = (customid: string) => history.some((e) => e.op.kind === "convert" && e.op.customid === customid && e.status === 200);
	const pending = new Map<string, Op>();
	for (const op of plan.ops) {
		if ((op.kind === "pay" || op.kind === "refund" || op.kind === "dispute") && !acked(op))
			pending.set(JSON.stringify({ ...op, twice: 0 }), { ...op, twice: false });
		if (op.kind === "convert" && !recorded(op.customid)) pending.set(op.customid, op);
	}
	for (let attempt = 0; attempt < 30 && pending.size > 0; attempt++) {
		if (attempt > 0) await sleep(1000);
		await Promise.all(
			[...pending].map(async ([id, op]) => {
				const [a] = await perform(-1, -1, op);
				if (a && a.status >= 200 && a.status < 300) pending.delete(id);
				// A refusal for good (not 409 retryable, 429 or 5xx) is an answer: nothing to resend.
				else if (a && a.status >= 400 && a.status < 500 && a.status !== 409 && a.status !== 429) pending.delete(id);
			}),
		);
	}
}

interface QuietSide {
	side: Side;
	plan: Plan;
	w: SeedApp;
	fake: FakeStripe;
	history: Entry[];
	api: (op: string, body: object) => Promise<Answer>;
}

/**
 * Runs the scheduled job (inbox resends, payout redrives) until every check
 * passes on both sides or `quietMs` ran out; approves, as an operator would,
 * Stripe rewards held for review, so that each owes a definite amount; and,
 * once a reward's refused payout says why (checked then: its comment names
 * Stripe's code and request id), retries its payouts as the operator would
 * after fixing the customer in Stripe. A test-side violation says so.
 */
async function quiet(
	live: Live,
	sides: QuietSide[],
	hooks: FakeStripe["hooks"],
	quietMs: number,
	restartedAt: number,
): Promise<Violation[]> {
	const deadline = Date.now() + quietMs;
	const unexplained = new Map<string, Violation>();
	for (;;) {
		await request(live, "GET", `/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
		const violations: Violation[] = [];
		const waiting: string[] = [];
		for (const { side, plan, w, fake, history, api } of sides) {
			const label = (v: Violation) => (side === "test" ? { ...v, detail: `test side: ${v.detail}` } : v);
			const world = await readWorld(live, plan, w, fake, api, restartedAt, hooks);
			for (const v of failuresExplained(world)) unexplained.set(`${side} ${v.detail}`, label(v));
			const operator = (op: Op, a: Answer) =>
				history.push({ client: -2, index: -1, op, status: a.status, body: a.body, start: Date.now(), end: Date.now() });
			const held = world.rewards.filter((r) => !r.wallet && (r.status === "UnderReview" || r.status === "Suspicious"));
			for (const r of held) {
				const op: Op = { kind: "status", referrer: r.referrer, seq: Number(r.rewarddtlid.split("-").pop()), status: "Approved" };
				operator(op, await api("changerewardstatus", { rewardslist: [{ rewarddtlid: r.rewarddtlid, rewardstatus: "Approved" }] }));
			}
			// A refused payout of a reward that owes nothing (Rejected) and of which Stripe holds nothing stays `failed`, its
			// reason kept: a retry has nothing to book. A refused clawback of a Rejected reward is retried like any other.
			const failedRewards = world.rewards.filter((r) => !r.wallet && r.payoutstate === "failed" && !settledRejected(world, r));
			const failed = new Set(failedRewards.map((r) => r.referrer));
			for (const referrer of failed) {
				const op: Op = { kind: "retry", referrer };
				const path = `/apps/${w.appid}/users/${w.referrers[referrer]!.userkey}/payouts/retry${side === "test" ? "?mode=test" : ""}`;
				operator(op, await admin(live, "POST", path));
			}
			for (const r of held) waiting.push(`${side} ${r.rewarddtlid} ${r.status}`);
			for (const r of failedRewards) waiting.push(`${side} ${r.rewarddtlid} payout failed`);
			violations.push(...check(plan, history, world, STRIPE_KEYS[side]).map(label));
		}
		const all = [...unexplained.values(), ...violations];
		if (waiting.length === 0 && all.length === 0) return all;
		if (Date.now() > deadline) {
			// What the operator was still acting on when the quiet phase ran out: a slow machine, or a reward that never settles.
			if (waiting.length > 0) console.log(`seed quiet phase ran out, still acting on: ${waiting.join("; ")}`);
			return all;
		}
		await sleep(1500);
	}
}
