import { nowIso } from "../domain/dates";
import type { BreakerState } from "../domain/delivery";
import { type AuditEntry, runAudited } from "./audit";
import { rowsOf } from "./rows";

/** A `webhook_breakers` row (migrations/0003_webhook_breakers.sql). */
interface BreakerRow {
	appid: string;
	endpoint: string;
	failures: number;
	opens: number;
	open_until: number | null;
	probe_until: number | null;
	last_error: string | null;
	last_failure_at: string | null;
	version: number;
}

const toState = (row: BreakerRow): BreakerState => ({
	endpoint: row.endpoint,
	failures: row.failures,
	opens: row.opens,
	openUntil: row.open_until,
	probeUntil: row.probe_until,
	lastError: row.last_error,
	lastFailureAt: row.last_failure_at,
	version: row.version,
});

/** The breakers of the given apps and of the apps of the given events: one statement of the consumer's batch read. */
export function breakersLookup(db: D1Database, appidsJson: string, eventidsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`SELECT * FROM webhook_breakers WHERE appid IN (SELECT value FROM json_each(?1))
			    OR appid IN (SELECT appid FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?2)))`,
		)
		.bind(appidsJson, eventidsJson);
}

/** The result of breakersLookup, by app. */
export function breakersByApp(result: D1Result | undefined): Map<string, BreakerState> {
	return new Map(rowsOf<BreakerRow>(result).map((row) => [row.appid, toState(row)]));
}

/** The stored breaker of an app's webhook endpoint, or null (never failed). */
export async function readBreaker(db: D1Database, appid: string): Promise<BreakerState | null> {
	const row = await db.prepare("SELECT * FROM webhook_breakers WHERE appid = ?").bind(appid).first<BreakerRow>();
	return row ? toState(row) : null;
}

/**
 * Stores `next` if the row is still at `next.version` (or absent when that is
 * 0): a compare-and-set, so parallel deliveries never overwrite each other's
 * change. Returns false when another change came first.
 */
export async function writeBreaker(db: D1Database, appid: string, next: BreakerState): Promise<boolean> {
	const result = await db
		.prepare(
			`INSERT INTO webhook_breakers (appid, endpoint, failures, opens, open_until, probe_until, last_error, last_failure_at, version, updated_at)
			 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 + 1, ?10)
			 ON CONFLICT (appid) DO UPDATE SET endpoint = ?2, failures = ?3, opens = ?4, open_until = ?5, probe_until = ?6,
			   last_error = ?7, last_failure_at = ?8, version = ?9 + 1, updated_at = ?10
			 WHERE webhook_breakers.version = ?9`,
		)
		.bind(
			appid,
			next.endpoint,
			next.failures,
			next.opens,
			next.openUntil,
			next.probeUntil,
			next.lastError,
			next.lastFailureAt,
			next.version,
			nowIso(),
		)
		.run();
	return result.meta.changes > 0;
}

/** Closes an app's breaker (admin reset); false when it had none. */
export async function resetBreaker(db: D1Database, appid: string, audit: AuditEntry): Promise<boolean> {
	const result = await runAudited(db, db.prepare("DELETE FROM webhook_breakers WHERE appid = ?").bind(appid), audit);
	return result.meta.changes > 0;
}
