// Shared by the projection's tests: a projected reward row with defaults, a ledger's queued flush pass with its
// messages captured instead of sent, and the projection consumer run by hand on chosen messages.
import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { ProjectedRow, ProjectionMessage } from "../../src/db/projection-batch";
import { withBindings } from "../../src/instrument/d1-metrics";
import type { InFlight } from "../../src/ledger/in-flight";
import { flushOutboxOnce } from "../../src/ledger/outbox";
import type { ledgerFor } from "../../src/ledger/stub";
import { projectionQueue } from "../../src/outbox/projection-consumer";

/** A Referrer's approved 5.00 USD Purchase reward as a ledger projects it, at version 1; `overrides` say the rest. */
export function projectedRow(seq: number, overrides: Partial<ProjectedRow> = {}): ProjectedRow {
	return {
		seq,
		campaignid: 1,
		eventname: "Purchase",
		usertype: "Referrer",
		amount: 500,
		reversed: 0,
		rewardunit: "USD",
		rewardtype: "InstoreCredits",
		status: "Approved",
		redeemed: 0,
		comment: null,
		friend_userkey: "friend",
		created_at: "2026-01-01T00:00:00.000Z",
		updated_at: "2026-01-01T00:00:00.000Z",
		version: 1,
		fraudsignals: "[]",
		payoutid: null,
		payout_state: null,
		...overrides,
	};
}

/**
 * A queued flush pass of `ledger`, its messages captured instead of sent (the test chooses when the consumer gets
 * them), with the ledger's in-memory holds `inFlight` when given (as its FlushSchedule keeps them).
 */
export function capturedFlushPass(
	ledger: ReturnType<typeof ledgerFor>,
	appid: string,
	userkey: string,
	inFlight?: InFlight,
): Promise<ProjectionMessage[]> {
	const sent: ProjectionMessage[] = [];
	const queue = { sendBatch: async (messages: { body: ProjectionMessage }[]) => void sent.push(...messages.map((m) => m.body)) };
	return runInDurableObject(ledger, async (_l, state) => {
		await flushOutboxOnce({
			queued: true,
			sql: state.storage.sql,
			transactionSync: (fn) => state.storage.transactionSync(fn),
			env: withBindings(env, { PROJECTION: queue as unknown as Queue }),
			appid,
			userkey,
			assignCoupon: () => undefined,
			...(inFlight ? { inFlight } : {}),
		});
		return sent;
	});
}

/** The projection consumer on `messages` as one batch (it writes D1, enqueues webhook events, acknowledges to the ledgers). */
export async function consumeProjection(messages: ProjectionMessage[], idPrefix = "projection") {
	const batch = createMessageBatch(
		"referral-projection",
		messages.map((body, i) => ({ id: `${idPrefix}-${i}-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body })),
	);
	const ctx = createExecutionContext();
	await projectionQueue(batch, env, ctx);
	return getQueueResult(batch, ctx);
}
