import { type FakeStripe, startFakeStripe } from "../fake-stripe";
import { check, type Entry, failuresExplained, type Violation } from "./checker";
import { generate, type Op, type Plan } from "./generator";
import { type Answer, admin, chargeRefundedEvent, deliver, disputeEvent, invoicePaidEvent, type Live, request } from "./service";
import { readWorld, type SeedApp } from "./world";

/**
 * One seed of the history checker against a running service: an app with a
 * Stripe campaign (10 % of a payment to the referrer, paid into Stripe) and
 * a wallet campaign (5 USD per Purchase), `clients` concurrent clients
 * running the plan, the service killed and restarted when the plan says, then
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
	restartMs: number;
	/** Set-up (app, campaigns, users), the plan's operations (with the restart), the drain and the quiet phase. */
	phases: { setupMs: number; runMs: number; drainMs: number; quietMs: number };
	ms: number;
	violations: Violation[];
	/** Only when a violation was found: the rewards and Stripe calls it names (written to the replay file). */
	evidence?: ReturnType<typeof evidenceOf>;
}

const WEBHOOK_SECRET = "whsec_historyCheckerSigningSecret0123";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setUp(live: Live, plan: Plan, fake: FakeStripe, tag: string): Promise<SeedApp> {
	const must = (what: string, a: Answer) => {
		if (a.status < 200 || a.status >= 300)
			throw new Error(`seed ${plan.seed} set-up: ${what} answered ${a.status} ${JSON.stringify(a.body)}`);
		return a.body ?? {};
	};
	const app = must("app", await admin(live, "POST", "/apps", { name: `history ${tag}`, webhookurl: `${fake.url}/hooks` }));
	const appid: string = app.appid;
	must(
		"Stripe campaign",
		await admin(live, "POST", `/apps/${appid}/campaigns`, {
			campaignname: "10% of a payment, into Stripe",
			distribution: "Stripe",
			currency: "USD",
			velocitythreshold: 0,
			rewardtype: 1,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
		}),
	);
	const wallet = must(
		"wallet campaign",
		await admin(live, "POST", `/apps/${appid}/campaigns`, {
			campaignname: "5 USD a purchase",
			velocitythreshold: 0,
			rewardtype: 1,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		}),
	).campaignid;
	must(
		"Stripe connection",
		await admin(live, "PATCH", `/apps/${appid}`, {
			stripe: { secretkey: "sk_test_history4242", webhooksecret: WEBHOOK_SECRET, apiurl: fake.url },
		}),
	);
	const creds = { apikey: app.apikey, privatekey: app.privatekey };
	const api = (op: string, body: object) => request(live, "POST", `/saas/v1_0/${op}`, { ...creds, ...body });
	const referrers: SeedApp["referrers"] = [];
	for (let i = 0; i < plan.referrers; i++) {
		const customer = `cus_${tag}_r${i}`;
		const r = must("referrer", await api("register", { email: `r${i}.${tag}@example.com`, paymentcustomerid: customer }));
		referrers.push({ userkey: r.userkey, customer, code: r.referralcode });
	}
	const friends: SeedApp["friends"] = [];
	for (let i = 0; i < plan.friends; i += 8) {
		const batch = [...Array(Math.min(8, plan.friends - i)).keys()].map(async (k) => {
			const f = i + k;
			const customer = `cus_${tag}_f${f}`;
			const referrer = referrers[f % plan.referrers]!;
			const body = must(
				"friend",
				await api("register", { email: `f${f}.${tag}@example.net`, paymentcustomerid: customer, referrercode: referrer.code }),
			);
			friends[f] = { userkey: body.userkey, customer };
		});
		await Promise.all(batch);
	}
	return { appid, creds, wallet, referrers, friends };
}

export async function runSeed(live: Live, seed: number, options: SeedOptions): Promise<SeedResult> {
	const t0 = Date.now();
	const plan = generate(seed, { ops: options.ops });
	// hang: a key never answered, past the client's timeout (STRIPE_TIMEOUT_MS, service.ts), until its lookup (issue 47).
	const fake = await startFakeStripe({
		seed,
		fail5xx: 0.1,
		late: 0.05,
		lateMs: 400,
		maxLatencyMs: 60,
		rateLimit: 0.05,
		refuse: 0.04,
		hang: 0.03,
		hangMs: 2_500,
	});
	const tag = `h${seed}${Date.now().toString(36)}`;
	try {
		const w = await setUp(live, plan, fake, tag);
		const t1 = Date.now();
		const history: Entry[] = [];
		const api = (op: string, body: object) => request(live, "POST", `/saas/v1_0/${op}`, { ...w.creds, ...body });
		const refkey = (r: number) => w.referrers[r]!.userkey;

		const send = (op: Op): Promise<Answer>[] => {
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
				case "pay": {
					const event = invoicePaidEvent(tag, op.friend, w.friends[op.friend]!.customer, plan.invoices.get(op.friend)!);
					return Array.from({ length: op.twice ? 2 : 1 }, () => deliver(live, w.appid, WEBHOOK_SECRET, event));
				}
				case "refund": {
					const amount = plan.invoices.get(op.friend)!;
					const event = chargeRefundedEvent(tag, op.friend, w.friends[op.friend]!.customer, amount, op.total);
					return Array.from({ length: op.twice ? 2 : 1 }, () => deliver(live, w.appid, WEBHOOK_SECRET, event));
				}
				case "status":
					return [
						api("changerewardstatus", { rewardslist: [{ rewarddtlid: `${refkey(op.referrer)}-${op.seq}`, rewardstatus: op.status }] }),
					];
				case "redeem":
					return [api("redeemrewards", { userkey: refkey(op.referrer), amount: op.amount / 100, rewardunit: "USD", campaignid: w.wallet })];
				case "retry":
					return [admin(live, "POST", `/apps/${w.appid}/users/${refkey(op.referrer)}/payouts/retry`)];
				case "dispute": {
					const event = disputeEvent(tag, op.friend, plan.invoices.get(op.friend)!, op.state);
					return Array.from({ length: op.twice ? 2 : 1 }, () => deliver(live, w.appid, WEBHOOK_SECRET, event));
				}
			}
		};
		const perform = async (client: number, index: number, op: Op) => {
			const start = Date.now();
			const answers = await Promise.all(send(op));
			const end = Date.now();
			for (const a of answers) history.push({ client, index, op, status: a.status, body: a.body, start, end });
			return answers;
		};

		// The clients: each takes the plan's next operation; the one reaching killAt crashes the service, the others wait.
		let next = 0;
		let gate: Promise<unknown> = Promise.resolve();
		let restartMs = 0;
		let restartedAt = 0;
		const client = async (id: number) => {
			for (;;) {
				await gate;
				const index = next++;
				if (index >= plan.ops.length) return;
				if (index === plan.killAt) {
					// In-flight requests of the other clients are cut: their outcomes are unknown.
					gate = live.crash().then((ms) => {
						restartMs = ms;
						restartedAt = Date.now();
					});
					await gate;
				}
				await perform(id, index, plan.ops[index]!);
			}
		};
		await Promise.all(Array.from({ length: options.clients }, (_, id) => client(id)));

		const t2 = Date.now();
		await drain(plan, history, perform);
		const t3 = Date.now();
		const { violations, world } = await quiet(live, plan, w, fake, history, options.quietMs, api, restartedAt);
		const phases = { setupMs: t1 - t0, runMs: t2 - t1, drainMs: t3 - t2, quietMs: Date.now() - t3 };
		const cut = fake.calls.filter((c) => c.status === -1).length;
		const injected5xx = fake.calls.filter((c) => c.status === 500).length;
		const count = (p: (c: (typeof fake.calls)[number]) => boolean) => fake.calls.filter(p).length;
		return {
			seed,
			ops: plan.ops.length,
			requests: history.length,
			unknown: history.filter((e) => e.status === 0).length,
			stripeCalls: fake.calls.length,
			injected5xx,
			cut,
			rateLimited: count((c) => c.status === 429),
			inUse: count((c) => c.status === 409),
			refused: count((c) => (c.status === 402 || c.status === 404) && !c.replayed && c.path.endsWith("/balance_transactions")),
			lookups: count((c) => c.method === "GET" && c.path.endsWith("/balance_transactions")),
			restartMs,
			phases,
			ms: Date.now() - t0,
			violations,
			// For a broken seed's replay file only: the rewards and Stripe calls each violation names.
			...(violations.length > 0 ? { evidence: evidenceOf(violations, world, fake.calls) } : {}),
		};
	} finally {
		await fake.close();
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

/**
 * Runs the scheduled job (inbox resends, payout redrives) until every check
 * passes or `quietMs` ran out; approves, as an operator would, Stripe
 * rewards held for review, so that each owes a definite amount; and, once a
 * reward's refused payout says why (checked then: its comment names
 * Stripe's code and request id), retries its payouts as the operator would
 * after fixing the customer in Stripe.
 */
async function quiet(
	live: Live,
	plan: Plan,
	w: SeedApp,
	fake: FakeStripe,
	history: Entry[],
	quietMs: number,
	api: (op: string, body: object) => Promise<Answer>,
	restartedAt: number,
): Promise<{ violations: Violation[]; world: Awaited<ReturnType<typeof readWorld>> }> {
	const deadline = Date.now() + quietMs;
	const unexplained = new Map<string, Violation>();
	for (;;) {
		await request(live, "GET", `/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
		const world = await readWorld(live, plan, w, fake, api, restartedAt);
		for (const v of failuresExplained(world)) unexplained.set(v.detail, v);
		const operator = (op: Op, a: Answer) =>
			history.push({ client: -2, index: -1, op, status: a.status, body: a.body, start: Date.now(), end: Date.now() });
		const held = world.rewards.filter((r) => !r.wallet && (r.status === "UnderReview" || r.status === "Suspicious"));
		for (const r of held) {
			const op: Op = { kind: "status", referrer: r.referrer, seq: Number(r.rewarddtlid.split("-").pop()), status: "Approved" };
			operator(op, await api("changerewardstatus", { rewardslist: [{ rewarddtlid: r.rewarddtlid, rewardstatus: "Approved" }] }));
		}
		const failed = new Set(world.rewards.filter((r) => !r.wallet && r.payoutstate === "failed").map((r) => r.referrer));
		for (const referrer of failed) {
			const op: Op = { kind: "retry", referrer };
			operator(op, await admin(live, "POST", `/apps/${w.appid}/users/${w.referrers[referrer]!.userkey}/payouts/retry`));
		}
		const violations = [...unexplained.values(), ...check(plan, history, world)];
		if ((held.length === 0 && failed.size === 0 && violations.length === 0) || Date.now() > deadline) return { violations, world };
		await sleep(1500);
	}
}

/** What a violation's detail names (reward ids), with the world's rows and the Stripe calls that carry them. */
function evidenceOf(violations: Violation[], world: Awaited<ReturnType<typeof readWorld>>, calls: FakeStripe["calls"]) {
	const ids = new Set(violations.flatMap((v) => v.detail.match(/[a-z0-9]{20}-\d+/g) ?? []));
	return [...ids].map((id) => ({
		id,
		rewards: world.rewards.filter((r) => r.rewarddtlid === id),
		calls: calls.filter((c) => JSON.stringify(c.form).includes(id) || (c.idempotencyKey ?? "").includes(id)),
	}));
}
