import { offsetMinutes } from "../domain/time-zone";

/**
 * Recurring windows (issue 34; docs/rewards.md, "Recurring windows"): a rule
 * with `recurringmonths: M` rewards only events within M calendar months of
 * the friend's first event of its eventname in the campaign. Calendar months
 * are the app's time zone's: the window ends at the same local date and time
 * M months later, the day clamped to the month's last (a first event on
 * 31 January local, M = 1, ends on the last day of February local).
 */

/** The UTC instant (ms) of the local wall-clock time `localMs` (a UTC-based timestamp of the local fields) in `zone`. */
function fromLocal(zone: string, localMs: number): number {
	const guess = localMs - offsetMinutes(zone, localMs) * 60_000;
	return localMs - offsetMinutes(zone, guess) * 60_000;
}

/** The end (exclusive, ISO) of the window of `months` calendar months in `zone` that starts at `firstAt` (ISO). */
export function recurringWindowEnd(firstAt: string, months: number, zone: string): string {
	const first = Date.parse(firstAt);
	const local = new Date(first + offsetMinutes(zone, first) * 60_000);
	const monthIndex = local.getUTCMonth() + months;
	const year = local.getUTCFullYear() + Math.floor(monthIndex / 12);
	const month = ((monthIndex % 12) + 12) % 12;
	const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
	const day = Math.min(local.getUTCDate(), lastDay);
	const end = Date.UTC(year, month, day, local.getUTCHours(), local.getUTCMinutes(), local.getUTCSeconds(), local.getUTCMilliseconds());
	return new Date(fromLocal(zone, end)).toISOString();
}

/**
 * True when an event at `at` (ISO) is inside the window: no window (0), no
 * earlier event (this one starts it), or before the window's end.
 */
export function withinRecurringWindow(months: number, firstAt: string | null, at: string, zone: string): boolean {
	if (months <= 0 || firstAt === null) return true;
	return Date.parse(at) < Date.parse(recurringWindowEnd(firstAt, months, zone));
}
