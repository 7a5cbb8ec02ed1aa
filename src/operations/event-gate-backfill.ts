import { legacyEventsAfter, markBackfill, nextLegacyApp } from "../db/event-backfill";
import { gateShard } from "../domain/gate-shard";
import { type GateEvent, gateStub } from "../ledger/event-gate";

/**
 * The backfill of the event gates (issue 49, migration 0045): an app with
 * events recorded in D1 before the gates is marked `legacy_events`, and a
 * gate miss for it reads D1 once (one read per NEW event of that app, on its
 * request path). This job, every minute, copies such an app's events into
 * their gates, PAGE events at a time in its (appid, customid) key order from
 * where the last run stopped, at most PAGES pages a run, and clears the mark
 * once the app has none left: from then on its gate misses are answers.
 *
 * Sound because no new event reaches D1 without its gate: since the gates,
 * D1's rows come from the projection of events the gates claimed first. (A
 * gradual deployment that still runs the code from before the gates can add
 * events D1-only while it lasts: run the backfill again by marking the app.)
 * A page copied twice (a run that died before its cursor moved) changes
 * nothing: a gate keeps what it has.
 */

export const PAGE = 500;
export const PAGES = 10;

export interface BackfillReport {
	events: number;
	appsDone: number;
}

/** `page`: events per page (PAGE; smaller in tests). */
export async function backfillEventGates(env: Env, page = PAGE): Promise<BackfillReport> {
	const report: BackfillReport = { events: 0, appsDone: 0 };
	for (let n = 0; n < PAGES; n++) {
		const app = await nextLegacyApp(env.DB);
		if (!app) break;
		const events = await legacyEventsAfter(env.DB, app.appid, app.cursor, page);
		const byShard = new Map<number, GateEvent[]>();
		for (const event of events) {
			const shard = gateShard(event.appid, event.customid);
			byShard.set(shard, [...(byShard.get(shard) ?? []), event]);
		}
		await Promise.all([...byShard].map(([shard, mine]) => gateStub(env, shard).remember(mine)));
		report.events += events.length;
		const done = events.length < page;
		await markBackfill(env.DB, app.appid, events.at(-1)?.customid ?? app.cursor, done);
		if (done) report.appsDone++;
	}
	return report;
}
