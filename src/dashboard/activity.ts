/**
 * The analytics page at a glance (issue 32): which days of the range had any
 * activity and the quiet stretches between them (folded on the page), so a
 * month with one busy day reads as one busy day, not thirty rows of zeros
 * (the chart still draws the whole range: issue 48).
 */

import type { DayStats } from "../domain/stats";

/** A day of the stats answer (domain/stats.ts), as the page reads it. */
export type StatsDay = DayStats;

/** A run of consecutive days without activity, oldest first. */
export interface QuietRun {
	from: string;
	to: string;
	days: number;
}

export interface Activity<D extends StatsDay> {
	/** Days with any count, amount or link request, in the stats' order (oldest first). */
	active: D[];
	quiet: QuietRun[];
	quietDays: number;
}

const anyAmount = (amounts: Record<string, number>) => Object.values(amounts).some((v) => v !== 0);

export function isActive(d: StatsDay, requests = 0): boolean {
	return (
		d.clicks + d.signups + d.referredsignups + d.conversions + d.rewardscreated + requests > 0 ||
		anyAmount(d.rewardamount) ||
		anyAmount(d.redeemed)
	);
}

/** Splits `days` (oldest first) into active days and quiet runs; `requests` are link requests per day. */
export function activityOf<D extends StatsDay>(days: D[], requests: Map<string, number> = new Map()): Activity<D> {
	const active: D[] = [];
	const quiet: QuietRun[] = [];
	days.forEach((d, i) => {
		if (isActive(d, requests.get(d.day) ?? 0)) {
			active.push(d);
			return;
		}
		const run = quiet.at(-1);
		const previous = days[i - 1];
		if (run && previous && run.to === previous.day) {
			run.to = d.day;
			run.days++;
		} else quiet.push({ from: d.day, to: d.day, days: 1 });
	});
	return { active, quiet, quietDays: days.length - active.length };
}
