import { readBreaker, writeBreaker } from "../db/breakers";
import type { BreakerState } from "../domain/delivery";
import { breakerAfter, breakerGate, FAILURE_THRESHOLD, stateFor } from "./breaker";
import type { DeliveryTarget } from "./deliveries";

/**
 * The consumer's two hooks into the circuit breaker (breaker.ts): one read
 * before a webhook attempt, and a write after it only when the state changes.
 * Emails and apps without a webhook URL pass untouched.
 */

export type GateResult = { go: true; state: BreakerState | null } | { go: false; until: number; reason: string };

/** Error text prefix of a delivery the breaker held back (logged as a failed attempt that was not sent). */
export const BREAKER_OPEN = "circuit open: ";

const webhookEndpoint = (target: DeliveryTarget) => (target.event.kind === "webhook" ? (target.app?.webhookurl ?? null) : null);

/**
 * May this delivery be attempted now? A probe is claimed here (compare-and-set), so only one runs.
 * `known` is the stored breaker when the caller read it already (null: none stored), else it is read.
 */
export async function passBreaker(
	db: D1Database,
	target: DeliveryTarget,
	now = Date.now(),
	known?: BreakerState | null,
): Promise<GateResult> {
	const endpoint = webhookEndpoint(target);
	if (!endpoint) return { go: true, state: null };
	const state = stateFor(known !== undefined ? known : await readBreaker(db, target.event.appid), endpoint);
	const gate = breakerGate(state, now);
	if (gate.action === "attempt") return { go: true, state };
	if (gate.action === "probe") {
		if (await writeBreaker(db, target.event.appid, gate.claim))
			return { go: true, state: { ...gate.claim, version: gate.claim.version + 1 } };
		return { go: false, until: now + 5_000, reason: `${BREAKER_OPEN}not attempted: another delivery is probing the endpoint` };
	}
	const until = new Date(gate.until).toISOString();
	return {
		go: false,
		until: gate.until,
		reason: `${BREAKER_OPEN}not attempted: the endpoint failed ${Math.max(state.failures, FAILURE_THRESHOLD)} times in a row; cool-down until ${until}`,
	};
}

/** Records how an attempt went; retries its compare-and-set a few times against parallel deliveries. */
export async function reportToBreaker(
	db: D1Database,
	target: DeliveryTarget,
	before: BreakerState | null,
	ok: boolean,
	error: string | null,
	now = Date.now(),
): Promise<void> {
	const endpoint = webhookEndpoint(target);
	if (!endpoint || !before) return;
	let state = before;
	for (let round = 0; round < 4; round++) {
		const next = breakerAfter(state, ok, now, error);
		if (!next) return;
		if (await writeBreaker(db, target.event.appid, next)) return;
		state = stateFor(await readBreaker(db, target.event.appid), endpoint);
	}
	console.warn(JSON.stringify({ msg: "breaker state not updated after repeated conflicts", appid: target.event.appid }));
}
