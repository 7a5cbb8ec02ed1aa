import { seededRandom } from "./prng";

/**
 * The history checker's plan (issue 31, in the style of Jepsen's bank test):
 * from a seed, the same list of operations every time, so a failing seed
 * replays. What the clients then make of it is concurrent and not replayed
 * step for step; the plan, the kill's place and Stripe's misbehaviour are.
 *
 * The world: `referrers` referrers, each with friends (`friend % referrers`
 * is the friend's referrer). Each friend pays at most one Stripe invoice, so
 * a Stripe reward names its invoice through its friend. Wallet conversions
 * (`convert`) have customids of their own, some sent again.
 */

export const STATUSES = ["Approved", "Rejected", "Under Review", "Suspicious"] as const;

/** Amounts are in minor units (cents); the Stripe campaign pays 10 % of a payment to the referrer. */
export type Op =
	/** A wallet conversion (eventname Purchase, the wallet campaign), its customid maybe sent before. */
	| { kind: "convert"; friend: number; customid: string }
	/** Stripe's `invoice.paid` for the friend's invoice; `twice`: delivered twice at once. */
	| { kind: "pay"; friend: number; twice: boolean }
	/** Stripe's `charge.refunded` saying `total` was refunded so far (cumulative; a stale one repeats an older total). */
	| { kind: "refund"; friend: number; total: number; twice: boolean }
	/** changerewardstatus on the referrer's reward number `seq` (maybe none such: a 404 is an answer too). */
	| { kind: "status"; referrer: number; seq: number; status: (typeof STATUSES)[number] }
	/** redeemrewards by amount from the referrer's wallet rewards. */
	| { kind: "redeem"; referrer: number; amount: number }
	/** The operator's payout retry (admin API) for the referrer. */
	| { kind: "retry"; referrer: number }
	/** Stripe's `charge.dispute.created` (`open`) or `charge.dispute.closed` (`won`, `lost`) of the friend's charge (issue 47). */
	| { kind: "dispute"; friend: number; state: "open" | "won" | "lost"; twice: boolean };

export interface Plan {
	seed: number;
	referrers: number;
	friends: number;
	/** The amount each friend's invoice pays (minor units), by friend; absent: the friend pays nothing. */
	invoices: Map<number, number>;
	ops: Op[];
	/** The service is killed (`kill -9`) when this many operations have been started. */
	killAt: number;
}

export interface PlanOptions {
	ops: number;
	referrers?: number;
	friends?: number;
	/**
	 * `test`: the plan of the seed's test-mode tenant (the app's test twin, issue 47), drawn from streams of its own
	 * so the live plan of a seed stays what it was.
	 */
	stream?: "live" | "test";
}

/** The seed's test-mode tenant: a quarter of the live plan's operations, 2 referrers and 12 friends. */
export const testPlanOptions = (ops: number): PlanOptions => ({
	ops: Math.max(8, Math.round(ops / 4)),
	referrers: 2,
	friends: 12,
	stream: "test",
});

const WALLET_REWARD = 500;

/** What one wallet conversion earns the referrer (minor units): the wallet campaign's fixed 5 USD. */
export const walletReward = WALLET_REWARD;

export function generate(seed: number, { ops: count, referrers = 4, friends = 40, stream = "live" }: PlanOptions): Plan {
	const salt = stream === "test" ? 1_000_003 : 0;
	const random = seededRandom(seed * 7919 + 17 + salt);
	const int = (n: number) => Math.floor(random() * n);
	const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
	const invoices = new Map<number, number>();
	const refunded = new Map<number, number[]>();
	const customids: { friend: number; customid: string }[] = [];
	/** Rewards each referrer can have by now: what its seq numbers run up to. */
	const rewardsOf = new Array<number>(referrers).fill(0);
	const ops: Op[] = [];
	/** Payments held back to arrive after their refund (Stripe does not order its events). */
	const later: { at: number; op: Op }[] = [];
	let unpaid = [...Array(friends).keys()];
	while (ops.length < count) {
		const due = later.findIndex((l) => l.at <= ops.length);
		if (due >= 0) {
			ops.push(later.splice(due, 1)[0]!.op);
			continue;
		}
		const roll = random();
		if (roll < 0.25 || (unpaid.length === 0 && roll < 0.45)) {
			if (customids.length > 0 && random() < 0.3) {
				ops.push({ kind: "convert", ...pick(customids) });
			} else {
				const friend = int(friends);
				const made = { friend, customid: `s${seed}-c${customids.length}` };
				customids.push(made);
				rewardsOf[friend % referrers]!++;
				ops.push({ kind: "convert", ...made });
			}
		} else if (roll < 0.45) {
			const friend = pick(unpaid);
			unpaid = unpaid.filter((f) => f !== friend);
			const amount = (1 + int(20)) * 1000;
			invoices.set(friend, amount);
			refunded.set(friend, []);
			rewardsOf[friend % referrers]!++;
			const pay: Op = { kind: "pay", friend, twice: random() < 0.25 };
			if (random() < 0.15) {
				// The refund first: the payment's event comes a few operations later.
				const total = (1 + int(amount / 1000)) * 1000;
				refunded.get(friend)!.push(total);
				ops.push({ kind: "refund", friend, total, twice: false });
				later.push({ at: ops.length + 3 + int(12), op: pay });
			} else ops.push(pay);
		} else if (roll < 0.65 && refunded.size > 0) {
			const friend = pick([...refunded.keys()]);
			const amount = invoices.get(friend)!;
			const totals = refunded.get(friend)!;
			const so_far = totals.length > 0 ? Math.max(...totals) : 0;
			let total: number;
			if (totals.length > 0 && random() < 0.25)
				total = pick(totals); // stale: an older total again, out of order
			else if (random() < 0.3)
				total = amount; // the rest, in full
			else total = Math.min(amount, so_far + (1 + int(5)) * 1000);
			totals.push(total);
			ops.push({ kind: "refund", friend, total, twice: random() < 0.25 });
		} else if (roll < 0.8) {
			const referrer = int(referrers);
			const weights = random();
			const status = weights < 0.2 ? "Rejected" : weights < 0.55 ? "Under Review" : weights < 0.9 ? "Approved" : "Suspicious";
			ops.push({ kind: "status", referrer, seq: 1 + int(Math.max(1, rewardsOf[referrer]!)), status });
		} else if (roll < 0.92) {
			ops.push({ kind: "redeem", referrer: int(referrers), amount: (1 + int(12)) * 100 });
		} else {
			ops.push({ kind: "retry", referrer: int(referrers) });
		}
	}
	// Payments still held back arrive at the end (Stripe delivers every event, in some order).
	for (const l of later) ops.push(l.op);
	addDisputes(seed, ops, salt);
	const killAt = Math.floor(ops.length * (0.35 + random() * 0.3));
	return { seed, referrers, friends, invoices, ops, killAt };
}

/** Refund totals per friend (each invoice's charge), in the order the plan sends them. */
export function refundTotals(plan: Plan): Map<number, number[]> {
	const totals = new Map<number, number[]>();
	for (const op of plan.ops) if (op.kind === "refund") totals.set(op.friend, [...(totals.get(op.friend) ?? []), op.total]);
	return totals;
}

/**
 * Chargebacks (issue 47), drawn from a stream of their own so the rest of a
 * seed's plan stays as it was: up to 4 paid friends' charges are disputed,
 * each dispute opened and closed (won or lost, half each) at random places
 * after the payment, the close first one time in five (Stripe does not order
 * its events), either delivered twice at once one time in four.
 */
export function addDisputes(seed: number, ops: Op[], salt = 0): void {
	const random = seededRandom(seed * 104_729 + 3 + salt);
	const int = (n: number) => Math.floor(random() * n);
	const paid = [...new Set(ops.flatMap((op) => (op.kind === "pay" ? [op.friend] : [])))];
	for (let d = 0; d < Math.min(4, paid.length); d++) {
		const friend = paid.splice(int(paid.length), 1)[0]!;
		const after = ops.findIndex((op) => op.kind === "pay" && op.friend === friend) + 1;
		const close: Op = { kind: "dispute", friend, state: random() < 0.5 ? "won" : "lost", twice: random() < 0.25 };
		const open: Op = { kind: "dispute", friend, state: "open", twice: random() < 0.25 };
		const [first, second] = random() < 0.2 ? [close, open] : [open, close];
		const at = after + int(ops.length - after + 1);
		ops.splice(at, 0, first);
		ops.splice(at + 1 + int(ops.length - at), 0, second);
	}
}
