/**
 * Local days of an app's IANA time zone over UTC quarter-hour slots (the
 * analytics counters, migration 0014). Every zone's offset from UTC is a
 * whole number of quarter hours, so a local day is an exact run of slots.
 * Pure: Intl knows the zones and their daylight-saving rules.
 */

const DAY_MS = 86_400_000;
const SLOT_MS = 15 * 60_000;

/** The quarter-hour slot of an ISO instant: `YYYY-MM-DDTHH:MM`, minutes 00, 15, 30 or 45 (UTC). */
export function slotOf(iso: string): string {
	const t = Date.parse(iso);
	return new Date(t - (t % SLOT_MS)).toISOString().slice(0, 16);
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
	let f = formatters.get(zone);
	if (!f) {
		f = new Intl.DateTimeFormat("en-US", {
			timeZone: zone,
			hourCycle: "h23",
			year: "numeric",
			month: "2-digit",
			day: "2-digit",
			hour: "2-digit",
			minute: "2-digit",
		});
		formatters.set(zone, f);
	}
	return f;
}

/** True for a time zone name Intl knows (an IANA name such as Europe/Paris, or UTC). */
export function isTimeZone(name: string): boolean {
	if (name.trim() === "" || name.length > 64) return false;
	try {
		formatter(name);
		return true;
	} catch {
		return false;
	}
}

/** The last instant a Date holds (ms): past it, as for NaN, Intl refuses the instant. */
const MAX_DATE_MS = 8.64e15;

/** Minutes `zone` is ahead of UTC at the instant `t` (ms). */
export function offsetMinutes(zone: string, t: number): number {
	// An app's zone is UTC unless set (migration 0014), and UTC is 0 at every instant: no Intl formatter (its
	// first use in an isolate loads the zone's data, ~40 ms in a loaded profile) nor formatToParts per call
	// (1.4% of a first-reward conversion's profile, bench/README.md issue 33's CPU). Only "UTC" exactly,
	// the name the default stores; an instant Intl refuses still throws below.
	if (zone === "UTC" && Math.abs(t) <= MAX_DATE_MS) return 0;
	const parts: Record<string, number> = {};
	for (const p of formatter(zone).formatToParts(new Date(t))) if (p.type !== "literal") parts[p.type] = Number(p.value);
	const local = Date.UTC(parts.year ?? 1970, (parts.month ?? 1) - 1, parts.day ?? 1, parts.hour ?? 0, parts.minute ?? 0);
	return Math.round((local - (t - (t % 60_000))) / 60_000);
}

/** The local day (YYYY-MM-DD) of the instant `t` (ms) in `zone`. */
export function localDay(zone: string, t: number): string {
	return new Date(t + offsetMinutes(zone, t) * 60_000).toISOString().slice(0, 10);
}

/** The UTC instant (ms) at which the local day `day` (YYYY-MM-DD) starts in `zone`. */
export function localDayStart(zone: string, day: string): number {
	const midnight = Date.parse(`${day}T00:00:00Z`);
	const guess = midnight - offsetMinutes(zone, midnight) * 60_000;
	return midnight - offsetMinutes(zone, guess) * 60_000;
}

/** A run of slots with one offset: from `from` (inclusive) to the next segment's start. */
export interface OffsetSegment {
	/** First slot of the segment (`YYYY-MM-DDTHH:MM`, UTC). */
	from: string;
	offsetMinutes: number;
}

/**
 * The offsets of `zone` between the instants `start` and `end` (ms), as
 * segments starting at each change (found to the quarter hour): a year has
 * at most a few, so SQL can turn each slot into its local day with one CASE.
 */
export function offsetSegments(zone: string, start: number, end: number): OffsetSegment[] {
	const at = (t: number): OffsetSegment => ({ from: new Date(t).toISOString().slice(0, 16), offsetMinutes: offsetMinutes(zone, t) });
	const segments = [at(start)];
	let previous = start;
	for (let step = start + DAY_MS; previous < end; step += DAY_MS) {
		const t = Math.min(step, end);
		const offset = offsetMinutes(zone, t);
		if (offset !== segments[segments.length - 1]?.offsetMinutes) {
			// The change lies in (previous, t]: halve down to the slot where the new offset starts.
			let lo = previous;
			let hi = t;
			while (hi - lo > SLOT_MS) {
				const mid = lo + Math.floor((hi - lo) / 2 / SLOT_MS) * SLOT_MS;
				if (offsetMinutes(zone, mid) === offset) hi = mid;
				else lo = mid;
			}
			segments.push({ from: new Date(hi).toISOString().slice(0, 16), offsetMinutes: offset });
		}
		previous = t;
	}
	return segments;
}
