// The first reward's floor ratio with the machine's drift taken out (issue 33): the
// service's conversions and the floors' fixture measured INTERLEAVED, in one span
// of time, round by round.
//
// Why: on this 2-vCPU virtual machine the speed of the same work drifts by half
// within minutes (2026-11-27, 06:25-06:35: every kind of the fixture ~1.5x dearer
// in its third round than in its second, two minutes apart). A conversion
// measured for 8 s and its floors measured minutes later could read anywhere from
// 1.3x to 1.75x for the same code. Here each round runs bursts of first-reward
// conversions between the fixture's kinds (a burst, a few kinds, a burst, ...), so
// a round's conversions and the floor priced from that round's kinds share the
// same minute of the machine; the ratio is taken per round, and the median of the
// rounds is the measure. The kinds' order changes from round to round (roundOrder),
// so no kind always follows a burst.
//
// The counts of parts (D1 round trips, calls, transactions, statements, rows...)
// are the service's own, counted over all the rounds (bench/run.mjs), as for
// every other conversion scenario: only their prices and the CPU are per round.

/**
 * The kinds' order in round `r`: turned by a different number of places each round and reversed every other one,
 * so no kind always comes right after a burst, or right before the next.
 */
export function roundOrder(list, r) {
	const shift = (r * 7) % list.length;
	const turned = [...list.slice(shift), ...list.slice(0, shift)];
	return r % 2 === 1 ? turned.reverse() : turned;
}

/**
 * Runs `rounds` rounds. Each round: the woken kind's objects written; then, every `group` kinds of the fixture
 * (floors.mjs startFloors, in roundOrder), one `burst()` of the scenario (it answers the requests it made);
 * a last burst; the service let go quiet (`quiet()`, so the round's background work is in its own CPU); the woken
 * kind measured. `serviceCpuMs()` reads the service's workerd CPU. The service's objects never wait 10 s between
 * bursts (workerd would evict them and the scenario would become another), so `group` kinds must take less.
 * Answers each kind's samples (one per round) and each round's service CPU per request and requests.
 */
export async function interleaveRounds({ floors, rounds, group = 4, burst, quiet, serviceCpuMs, log }) {
	const samples = Object.fromEntries([...floors.kinds, "writeWoken"].map((k) => [k, []]));
	const perRound = [];
	for (let r = 0; r < rounds; r++) {
		const cpuBefore = serviceCpuMs();
		let requests = 0;
		const measureWoken = await floors.prepareWoken();
		for (const [i, kind] of roundOrder(floors.kinds, r).entries()) {
			if (i % group === 0) requests += await burst();
			samples[kind].push(await floors.measure(kind));
		}
		requests += await burst();
		await quiet();
		const cpuMs = (serviceCpuMs() - cpuBefore) / Math.max(1, requests);
		// After the service's CPU is read: the fixture's woken objects have waited well past 10 s by now.
		samples.writeWoken.push(await measureWoken());
		perRound.push({ cpuMs, requests });
		log(`floor round ${r + 1} of ${rounds}: ${requests} first rewards, ${Math.round(cpuMs * 100) / 100} ms of workerd CPU each`);
	}
	return { samples, perRound };
}
