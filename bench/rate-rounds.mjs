// A scenario's req/s against the baseline's with the machine's drift taken out: the two measured in runs side by
// side, round by round, the ratio taken per round and the median of the rounds the measure (as floor-ratio.mjs
// does for the first reward's CPU).
//
// Why: on this 2-vCPU virtual machine the same code's speed moves by up to 1.7x between minutes. Three quick
// runs of one afternoon (2026-11-27, 19:08, 19:51 and 20:00 UTC, 8-second rows) read `conversion-steady` at
// 0.27x, 0.23x and 0.40x of baselines measured minutes before and after it, its workerd CPU per request 20.6,
// 25.2 and 14.9 ms. A ratio of two runs that share the same minute of the machine does not move with it.
//
// Each round waits for the service to go quiet (the scenario's background work: ledger flushes, the projection
// consumer), runs the baseline, then the scenario right after it: the baseline leaves no background work, and a
// quiet period before the scenario too would let workerd evict the scenario's warm ledgers (10 s idle), which a
// first version that alternated the order did (a round's steady scenario at 0.19x, 2026-11-27 20:19 UTC).

import { median } from "./stats.mjs";

/**
 * `rounds` rounds, each `quiet()`, then a run of the baseline and one of the scenario (`run(which)` answers its
 * req/s). Answers the rounds' req/s and ratios, and the median ratio.
 */
export async function rateRounds({ rounds, run, quiet, log = () => {} }) {
	const perRound = [];
	for (let r = 0; r < rounds; r++) {
		await quiet();
		const baseline = await run("baseline");
		const scenario = await run("scenario");
		const ratio = baseline > 0 ? scenario / baseline : 0;
		perRound.push({ baselineRps: round(baseline), scenarioRps: round(scenario), ratio: round(ratio, 3) });
		log(`  rate round ${r + 1} of ${rounds}: ${round(scenario)} / ${round(baseline)} req/s = ${round(ratio, 3)}x`);
	}
	return { perRound, ratio: median(perRound.map((p) => p.ratio)) };
}

function round(n, digits = 1) {
	const f = 10 ** digits;
	return Math.round(n * f) / f;
}
