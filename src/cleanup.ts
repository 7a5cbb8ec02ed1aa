import { AUDIT_RETENTION_DAYS, purgeOldAudit } from "./db/audit";
import { purgeOldClicks } from "./db/clicks";
import { deleteExpiredKeys } from "./db/idempotency-replies";
import { DELIVERED_RETENTION_DAYS, deleteDeliveredEvents } from "./db/outbox-retention";
import { purgeExpiredPasswordResets } from "./db/password-resets";
import { INBOX_DONE_RETENTION_DAYS, purgeDoneInboxEvents } from "./db/stripe-inbox";

/**
 * Clean-up jobs that keep up however much is due: each deletes in bounded
 * chunks (one indexed statement of at most CHUNK rows per D1 round trip, so
 * no statement holds the database long) until nothing is due, or until its
 * time budget is spent; then it logs that it is behind, and the next run
 * carries on where it stopped.
 */

/** Rows per statement: small enough that one statement never holds D1 for long, large enough to keep up. */
export const CHUNK = 1_000;
/** The every-minute jobs stop well inside their minute, so two runs never overlap. */
export const MINUTE_BUDGET_MS = 20_000;
/** The daily jobs may take longer (a cron on a longer interval may run for minutes). */
export const DAILY_BUDGET_MS = 120_000;

export interface DrainResult {
	deleted: number;
	/** D1 round trips made (one per chunk). */
	chunks: number;
	/** True when the budget ran out with rows still due. */
	behind: boolean;
}

/**
 * Calls `deleteChunk(limit)` until it deletes fewer than `chunk` rows (nothing
 * more is due) or `budgetMs` has passed since the start.
 */
export async function drain(
	job: string,
	deleteChunk: (limit: number) => Promise<number>,
	options: { chunk?: number; budgetMs: number; now?: () => number },
): Promise<DrainResult> {
	const chunk = options.chunk ?? CHUNK;
	const now = options.now ?? Date.now;
	const started = now();
	const result: DrainResult = { deleted: 0, chunks: 0, behind: false };
	for (;;) {
		const deleted = await deleteChunk(chunk);
		result.deleted += deleted;
		result.chunks++;
		if (deleted < chunk) return result;
		if (now() - started >= options.budgetMs) break;
	}
	result.behind = true;
	console.warn(
		JSON.stringify({
			msg: "clean-up job is behind: its time budget ran out with rows still due; the next run carries on",
			job,
			deleted: result.deleted,
			chunks: result.chunks,
			budgetms: options.budgetMs,
		}),
	);
	return result;
}

const daysBefore = (ms: number, days: number) => new Date(ms - days * 86_400_000).toISOString();

/** Idempotency keys past their 24 h (http/idempotency-key.ts), through idempotency_keys_expires. */
export const expireIdempotencyKeys = (env: Env, controller: ScheduledController, budgetMs = MINUTE_BUDGET_MS) =>
	drain("idempotency-keys-expiry", (limit) => deleteExpiredKeys(env.DB, controller.scheduledTime, limit), { budgetMs });

/**
 * Password resets past their hour, used or not (db/password-resets.ts): the
 * reset cap counts only unexpired ones, so it loses nothing; through
 * password_resets_expiry (migration 0047), CHUNK rows a statement.
 */
export const purgePasswordResets = (env: Env, controller: ScheduledController, budgetMs = MINUTE_BUDGET_MS) =>
	drain("password-resets-expiry", (limit) => purgeExpiredPasswordResets(env.DB, controller.scheduledTime, limit), { budgetMs });

/** Stripe events done more than INBOX_DONE_RETENTION_DAYS ago (db/stripe-inbox.ts), through stripe_inbox_done. */
export const purgeDoneStripeEvents = (env: Env, controller: ScheduledController, budgetMs = DAILY_BUDGET_MS) =>
	drain(
		"purge-done-stripe-events",
		(limit) => purgeDoneInboxEvents(env.DB, controller.scheduledTime - INBOX_DONE_RETENTION_DAYS * 86_400_000, limit),
		{ budgetMs },
	);

/** Per-click rows older than 30 days (CLICK_RETENTION_DAYS; the daily counts stay), through link_click_log_time. */
export const purgeClickLog = (env: Env, controller: ScheduledController, budgetMs = DAILY_BUDGET_MS) =>
	drain("purge-old-clicks", (limit) => purgeOldClicks(env.DB, new Date(controller.scheduledTime), limit), { budgetMs });

/** Audit entries older than AUDIT_RETENTION_DAYS (docs/operators.md), oldest first through audit_at. */
export const purgeOldAuditEntries = (env: Env, controller: ScheduledController, budgetMs = DAILY_BUDGET_MS) =>
	drain("purge-old-audit", (limit) => purgeOldAudit(env.DB, daysBefore(controller.scheduledTime, AUDIT_RETENTION_DAYS), limit), {
		budgetMs,
	});

/** Outbox events delivered more than DELIVERED_RETENTION_DAYS ago, with their attempts, through outbox_delivered (counted in events). */
export const purgeDeliveredEvents = (env: Env, controller: ScheduledController, budgetMs = DAILY_BUDGET_MS) =>
	drain(
		"purge-delivered-events",
		(limit) => deleteDeliveredEvents(env.DB, daysBefore(controller.scheduledTime, DELIVERED_RETENTION_DAYS), limit),
		{ budgetMs },
	);
