import {
	expireIdempotencyKeys,
	purgeClickLog,
	purgeDeliveredEvents,
	purgeDoneStripeEvents,
	purgeOldAuditEntries,
	purgePasswordResets,
} from "./cleanup";
import { purgeExpiredAdminSessions } from "./db/admin-sessions";
import { deleteOldDecisions } from "./db/decisions";
import { purgeUsedChallenges } from "./db/passkeys";
import { purgeClickMarks } from "./db/unique-clicks";
import { UNIQUE_CLICK_WINDOW_MS } from "./fraud/clicks";
import { instrumentEnv } from "./instrument/d1-metrics";
import { redriveStuckPayouts, sweepStripeInbox } from "./integrations/stripe/sweep";
import { completeRecordedConversions } from "./operations/conversion-completion";
import { backfillEventGates } from "./operations/event-gate-backfill";
import { recountCurrentBoards } from "./operations/leaderboard-recount";
import { sweepOutbox } from "./outbox/sweep";

const EVERY_MINUTE = "* * * * *";
const DAILY = "17 3 * * *";

/** One periodic job: its name (for logs), the cron trigger it runs on (wrangler.toml `[triggers]`) and what it does. */
export interface ScheduledJob {
	name: string;
	cron: string;
	run(env: Env, controller: ScheduledController): Promise<unknown>;
}

/**
 * The cron jobs. Each runs on its own: one failing is logged and does not
 * stop the others. Add a job as one entry (and its cron to wrangler.toml).
 */
export const JOBS: ScheduledJob[] = [
	// Events whose enqueue failed or never ran; also run by the queue consumer, but that needs traffic.
	{ name: "outbox-sweep", cron: EVERY_MINUTE, run: (env) => sweepOutbox(env) },
	// Recorded conversions whose grants were not confirmed a minute later (a Worker died between the two).
	{
		name: "conversion-completion",
		cron: EVERY_MINUTE,
		run: (env, controller) => completeRecordedConversions(env, controller.scheduledTime),
	},
	// Events recorded in D1 before the event gates, copied into them (issue 49, migration 0045).
	{ name: "event-gate-backfill", cron: EVERY_MINUTE, run: (env) => backfillEventGates(env) },
	// The current month's and week's leaderboard counters, recounted once under migration 0040's rule (migration 0047).
	{ name: "leaderboard-recount", cron: EVERY_MINUTE, run: (env, controller) => recountCurrentBoards(env, controller.scheduledTime) },
	// Stripe payouts due or sending that nothing moved for a while (integrations/stripe/sweep.ts).
	{ name: "stripe-payout-redrive", cron: EVERY_MINUTE, run: (env, controller) => redriveStuckPayouts(env, controller.scheduledTime) },
	// Stripe events stored and not done (a message lost in a crash): sent again.
	{ name: "stripe-inbox-sweep", cron: EVERY_MINUTE, run: (env, controller) => sweepStripeInbox(env, controller.scheduledTime) },
	// Idempotency keys are kept 24 h (http/idempotency-key.ts).
	{ name: "idempotency-keys-expiry", cron: EVERY_MINUTE, run: expireIdempotencyKeys },
	// Decisions of multi-ledger transactions are read only within a lease (seconds); a week is ample.
	{ name: "ledger-decisions-expiry", cron: EVERY_MINUTE, run: (env) => deleteOldDecisions(env.DB, 7 * 86_400_000) },
	// Dashboard sessions past their 12 h expiry (signed-out ones are deleted at once).
	{
		name: "admin-sessions-expiry",
		cron: EVERY_MINUTE,
		run: (env, controller) => purgeExpiredAdminSessions(env.DB, controller.scheduledTime),
	},
	// Password resets past their hour, used or not: no longer usable nor counted by the reset cap (issue 47's review).
	{ name: "password-resets-expiry", cron: EVERY_MINUTE, run: purgePasswordResets },
	// Passkey challenges used: past their 5-minute expiry they could not be used again anyway (dashboard/webauthn.ts).
	{
		name: "passkey-challenges-expiry",
		cron: EVERY_MINUTE,
		run: (env, controller) => purgeUsedChallenges(env.DB, controller.scheduledTime),
	},
	// Unique clicks: a client's mark says nothing once its 30-minute window is over (fraud/clicks.ts).
	{
		name: "click-marks-expiry",
		cron: EVERY_MINUTE,
		run: (env, controller) => purgeClickMarks(env.DB, new Date(controller.scheduledTime), UNIQUE_CLICK_WINDOW_MS),
	},
	// Share-link clicks: per-click rows (IP hash, user agent) are kept 30 days; the daily counts stay.
	{
		name: "purge-old-clicks",
		cron: DAILY,
		run: purgeClickLog,
	},
	// Delivered webhooks and emails, with their attempts, 30 days after delivery (db/outbox-retention.ts).
	{ name: "purge-delivered-events", cron: DAILY, run: purgeDeliveredEvents },
	{ name: "purge-old-audit", cron: DAILY, run: purgeOldAuditEntries },
	// Stripe events done more than 35 days ago: Stripe sends none of them again (db/stripe-inbox.ts).
	{ name: "purge-done-stripe-events", cron: DAILY, run: purgeDoneStripeEvents },
];

export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
	// With the bench's D1_QUERY_COUNT flag, the jobs' D1 use is counted too (bench/README.md, "D1 counts").
	await runJobs(
		JOBS.filter((job) => job.cron === controller.cron),
		controller,
		instrumentEnv(env, "scheduled"),
	);
}

export async function runJobs(jobs: ScheduledJob[], controller: ScheduledController, env: Env): Promise<void> {
	const outcomes = await Promise.allSettled(jobs.map((job) => job.run(env, controller)));
	outcomes.forEach((outcome, i) => {
		const name = jobs[i]?.name;
		if (outcome.status === "rejected")
			console.error(JSON.stringify({ msg: "scheduled job failed", job: name, error: String(outcome.reason) }));
		else console.log(JSON.stringify({ msg: "scheduled job done", job: name, result: outcome.value ?? null }));
	});
}
