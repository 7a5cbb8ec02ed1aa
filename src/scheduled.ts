import { purgeOldClicks } from "./db/clicks";

/** One scheduled job: gets the cron's time, returns a short report for the log. */
export interface ScheduledJob {
	name: string;
	run(env: Env, now: Date): Promise<Record<string, number>>;
}

/** Every job the cron trigger runs (wrangler.toml `[triggers]`), each independent of the others. */
export const JOBS: ScheduledJob[] = [
	// Share-link clicks: per-click rows (IP hash, user agent) are kept 30 days; the daily counts stay.
	{ name: "purge-old-clicks", run: async (env, now) => ({ deleted: await purgeOldClicks(env.DB, now) }) },
];

/**
 * The cron handler: runs every job; one failing does not stop the others,
 * and the run fails (so Cloudflare reports it) when any did.
 */
export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
	const now = new Date(controller.scheduledTime);
	const results = await Promise.allSettled(
		JOBS.map(async (job) => {
			const report = await job.run(env, now);
			console.log(JSON.stringify({ level: "info", message: "scheduled job done", job: job.name, ...report }));
		}),
	);
	const failed = results.flatMap((r, i) => (r.status === "rejected" ? [{ job: JOBS[i]?.name, error: String(r.reason) }] : []));
	for (const f of failed) console.error(JSON.stringify({ level: "error", message: "scheduled job failed", ...f }));
	if (failed.length > 0) throw new Error(`scheduled jobs failed: ${failed.map((f) => f.job).join(", ")}`);
}
