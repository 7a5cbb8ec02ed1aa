import { deleteOldDecisions } from "./db/decisions";
import { deleteExpiredKeys } from "./db/idempotency";
import { sweepOutbox } from "./outbox/sweep";

/** One periodic job: its name (for logs) and what it does. */
export interface ScheduledJob {
	name: string;
	run(env: Env, controller: ScheduledController): Promise<unknown>;
}

/**
 * The cron jobs (wrangler.toml `[triggers] crons`, every minute). Each runs on
 * its own: one failing is logged and does not stop the others. Add a job as
 * one entry.
 */
export const JOBS: ScheduledJob[] = [
	// Events whose enqueue failed or never ran; also run by the queue consumer, but that needs traffic.
	{ name: "outbox-sweep", run: (env) => sweepOutbox(env) },
	// Idempotency keys are kept 24 h (http/idempotency.ts).
	{ name: "idempotency-keys-expiry", run: (env) => deleteExpiredKeys(env.DB) },
	// Decisions of multi-ledger transactions are read only within a lease (seconds); a week is ample.
	{ name: "ledger-decisions-expiry", run: (env) => deleteOldDecisions(env.DB, 7 * 86_400_000) },
];

export async function scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
	await runJobs(JOBS, controller, env);
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
