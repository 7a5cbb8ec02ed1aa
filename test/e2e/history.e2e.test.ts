import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSeed } from "./history/run";
import { type Live, startLive } from "./history/service";

// Issue 31's history checker (docs/stripe.md, "History checker"), in the
// style of Jepsen's bank test: concurrent clients drive conversions, Stripe's
// signed events (payments, partial and full refunds, duplicated, concurrent,
// out of order), status changes, redemptions and payout retries against
// `wrangler dev`, a local Stripe answers 500s, cuts connections after
// applying and adds latency, the service is killed (`kill -9`) and restarted
// mid-run; once quiet, the money invariants are checked (history/checker.ts).
// `npm run history -- --seed N` replays a seed; HISTORY_SEEDS / HISTORY_OPS
// choose them here (scripts/history.mjs sets them).

const SEEDS = (process.env.HISTORY_SEEDS ?? "1,2,3").split(",").map(Number);
const OPS = Number(process.env.HISTORY_OPS ?? 200);
const CLIENTS = Number(process.env.HISTORY_CLIENTS ?? 6);

let live: Live;

beforeAll(async () => {
	live = await startLive();
}, 300_000);

afterAll(async () => {
	await live?.stop();
});

describe("the history checker", () => {
	for (const seed of SEEDS)
		it(`seed ${seed}: ${OPS} operations, a kill -9 and a restart, no invariant broken`, { timeout: 300_000 }, async () => {
			const result = await runSeed(live, seed, { ops: OPS, clients: CLIENTS, quietMs: 60_000 });
			const { violations, evidence: _evidence, ...figures } = result;
			console.log(`history ${JSON.stringify({ ...figures, violations: violations.length })}`);
			if (violations.length > 0) {
				const file = `/tmp/history-seed-${seed}.json`;
				writeFileSync(file, JSON.stringify(result, null, 1));
				console.log(`seed ${seed} broke ${violations.length} invariant(s); replay: npm run history -- --seed ${seed} (details in ${file})`);
			}
			expect(result.ops).toBeGreaterThanOrEqual(OPS);
			expect(result.restartMs, "the service was killed and restarted").toBeGreaterThan(0);
			expect(violations, `seed ${seed}; replay: npm run history -- --seed ${seed}`).toEqual([]);
		});
});
