// A scenario's req/s against the baseline's with the machine's drift taken out: the two measured in alternating
// runs, round by round, the ratio taken per round and the median of the rounds the measure (as floor-ratio.mjs
// does for the first reward's CPU).
//
// Why: on this 2-vCPU virtual machine the same code's speed moves by a quarter between minutes. Two quick runs
// of the same commit, ten minutes apart (2026-11-27, 19:08 and 19:51 UTC, 8-second rows), read
// `conversion-steady` at 0.27x and 0.23x of a baseline measured minutes before and after it, its workerd CPU
// per request 20.6 and 25.2 ms. A ratio of two runs that share each minute of the machine does not move with it.

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

/**
 * `rounds` rounds, each a run of the baseline and one of the scenario (`run(which)` answers its req/s), the one
 * that goes first alternating, each after `quiet()` (the previous run's background work done). Answers the rounds'
 * req/s and ratios, and the median ratio.
 */
export async function rateRounds({ rounds, run, quiet, log = () => {} }) {
	const perRound = [];
	for (let r = 0; r < rounds; r++) {
		const rps = {};
		for (const which of r % 2 === 0 ? ["baseline", "scenario"] : ["scenario", "baseline"]) {
			await quiet();
			rps[which] = await run(which);
		}
		const ratio = rps.baseline > 0 ? rps.scenario / rps.baseline : 0;
		perRound.push({ baselineRps: round(rps.baseline), scenarioRps: round(rps.scenario), ratio: round(ratio, 3) });
		log(`  rate round ${r + 1} of ${rounds}: ${round(rps.scenario)} / ${round(rps.baseline)} req/s = ${round(ratio, 3)}x`);
	}
	return { perRound, ratio: median(perRound.map((p) => p.ratio)) };
}

function round(n, digits = 1) {
	const f = 10 ** digits;
	return Math.round(n * f) / f;
}
