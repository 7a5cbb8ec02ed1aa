import Stripe from "stripe";
import type { PayoutLookup, PayoutOutcome } from "../../ledger/payout-resolution";
import { verdictOf } from "./pace";

/**
 * Looks an unknown payout up in Stripe (ledger/payout-resolution.ts,
 * docs/stripe.md "Unknown outcomes"): the customer's balance transactions,
 * newest first (`customers.listBalanceTransactions`), a page of 100 at a
 * time and at most LOOKUP_PAGES pages, each paced by the account's governor. The one whose metadata names the
 * payout (`payoutid`, its key; or, for a transaction created before that
 * field, `rewarddtlid` and `payout` n) is what Stripe applied. Reaching a
 * transaction created before the payout first left (less SKEW_MS for
 * clocks), or the end of the list, without it: Stripe never applied it. Only
 * the payout's own sends could have created it, and none is in flight: the
 * consumer sent its last attempt long before (it went unknown untouched
 * for the re-drive's delay, or was refused).
 */
export const LOOKUP_PAGES = 5;
const PAGE = 100;
const SKEW_MS = 10 * 60_000;

const matches = (t: Stripe.CustomerBalanceTransaction, lookup: PayoutLookup) =>
	t.metadata?.payoutid === lookup.key || (t.metadata?.rewarddtlid === lookup.rewarddtlid && t.metadata?.payout === String(lookup.n));

/** What Stripe's record says about `lookup`; throws what may pass (network, 5xx, 429) so the queue tries again. */
export async function lookUpPayout(stripe: Stripe, lookup: PayoutLookup, pace: () => Promise<void>): Promise<PayoutOutcome> {
	let startingAfter: string | undefined;
	try {
		for (let page = 0; page < LOOKUP_PAGES; page++) {
			await pace();
			const list = await stripe.customers.listBalanceTransactions(lookup.customer, {
				limit: PAGE,
				...(startingAfter ? { starting_after: startingAfter } : {}),
			});
			for (const t of list.data) {
				if (matches(t, lookup)) return { applied: true, stripeId: t.id };
				if (t.created * 1000 < lookup.sentAt - SKEW_MS) return { applied: false };
			}
			startingAfter = list.data.at(-1)?.id;
			if (!list.has_more || !startingAfter) return { applied: false };
		}
	} catch (error) {
		// A customer Stripe no longer knows (deleted): its record cannot be read, the operator decides.
		if (verdictOf(error) === "refused" && error instanceof Stripe.errors.StripeError)
			return { undecided: `Stripe answered ${error.code ?? error.type} to the lookup` };
		throw error;
	}
	return { undecided: `not among the customer's newest ${LOOKUP_PAGES * PAGE} balance transactions` };
}
