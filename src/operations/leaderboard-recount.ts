import { nextRecount, recountChunk } from "../db/leaderboard-recount";
import { bucketOf } from "../domain/leaderboard";

/**
 * The one-off recount of the current month's and week's leaderboard counters
 * (issue 47's review, migration 0047, docs/rewards.md "Leaderboards").
 * Migration 0040 made Suspicious rewards stop counting and recounted the
 * all-time counters in SQL; the month and week counters it could not, their
 * ranges being local to each app's time zone. Counters of a period under
 * way when the rule came kept a Suspicious friend counted, and counted twice
 * a friend whose Suspicious reward was approved since (the flush moves a
 * counter by the projection's difference, and under the new rule a
 * Suspicious reward was worth nothing before). Only the current month and
 * week are read, so this job recounts those of every app queued by the
 * migration, from the projected rewards, in the app's time zone now.
 *
 * Every minute, at most PAGES chunks of PAGE counter rows (db/leaderboard-recount.ts,
 * recountChunk: a range of the counters' key), from where the last run
 * stopped; an app leaves the queue when its counters are done, and the job
 * then reads one empty row per run. A chunk repeated (a run that died before
 * its cursor moved) recounts the same. A period that ends during the recount
 * is no longer read, and the next one began under the new rule.
 */

export const PAGE = 500;
export const PAGES = 10;

export interface RecountReport {
	chunks: number;
	appsDone: number;
}

/** `page`: counter rows per chunk (PAGE; smaller in tests). */
export async function recountCurrentBoards(env: Env, now: number, page = PAGE): Promise<RecountReport> {
	const report: RecountReport = { chunks: 0, appsDone: 0 };
	for (let n = 0; n < PAGES; n++) {
		const app = await nextRecount(env.DB);
		if (!app) break;
		// The buckets the flush gives a reward created now, as getleaderboard reads them (domain/leaderboard.ts).
		const buckets = [bucketOf("month", app.timezone, now), bucketOf("week", app.timezone, now)];
		const last = await recountChunk(env.DB, app.appid, app.after, buckets, page);
		if (last === null) report.appsDone++;
		else report.chunks++;
	}
	return report;
}
