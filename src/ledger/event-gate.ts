import { DurableObject } from "cloudflare:workers";
import { findStoredEvent, parseDecision, type StoredEvent } from "../db/events";
import { gateName, gateShard } from "../domain/gate-shard";
import { instrumentEnv } from "../instrument/d1-metrics";
import { countingStorage } from "../instrument/ledger-rows";
import type { OwnedGrant } from "../rewards/rules";

/**
 * The (app, customid) gate of conversion events (issue 49, docs/scaling.md
 * "Conversions without D1"). A customid is one event of one user, claimed
 * once: the claim and the event's frozen decision live here, in one of
 * EVENT_GATE_SHARDS objects (domain/gate-shard.ts), not in D1 on the
 * request path. Its retries read the decision here, so a repeat completes
 * exactly what the first call decided.
 *
 * `pending` lists the events whose grants are not yet known to be done: a
 * claim writes both rows in one transaction; the completion pass
 * (operations/conversion-completion.ts) settles them once D1 holds the
 * event's row (written by the projection of its `conversion.recorded`
 * entry, which the announcing ledger writes only after every grant of the
 * event), and re-drives the others.
 *
 * Upgrade: events recorded before the gate exist only in D1. For an app
 * that has such events (`legacy`, migrations/0045), a miss here reads D1
 * once and keeps what it found; for every other app a miss is the answer.
 */

/** An event as the gate keeps it: the stored event with its app and what was bought. */
export interface GateEvent extends StoredEvent {
	appid: string;
	productid: string | null;
	category: string | null;
}

/** A pending event, with the key of its pending row (the completion pass settles it by that key). */
export interface PendingEvent extends GateEvent {
	failures: number;
}

/** What a completion pass learned of one pending event. */
export interface Settlement {
	appid: string;
	customid: string;
	createdAt: string;
	failures: number;
	/** confirmed: D1 has its row; refused: its grants can never run; failed: try again later. */
	outcome: "confirmed" | "refused" | "failed";
}

const SCHEMA = [
	`CREATE TABLE IF NOT EXISTS events (appid TEXT NOT NULL, customid TEXT NOT NULL, userkey TEXT NOT NULL, eventname TEXT NOT NULL,
	   transactionvalue REAL, extrainfo TEXT, campaignid INTEGER NOT NULL, growthhack TEXT NOT NULL, created_at TEXT NOT NULL,
	   productid TEXT, category TEXT, decision TEXT, PRIMARY KEY (appid, customid)) WITHOUT ROWID`,
	// Ordered as the completion pass takes them: events that failed less first, then the oldest.
	`CREATE TABLE IF NOT EXISTS pending (failures INTEGER NOT NULL, created_at TEXT NOT NULL, appid TEXT NOT NULL, customid TEXT NOT NULL,
	   PRIMARY KEY (failures, created_at, appid, customid)) WITHOUT ROWID`,
];

type EventRow = {
	appid: string;
	customid: string;
	userkey: string;
	eventname: string;
	transactionvalue: number | null;
	extrainfo: string | null;
	campaignid: number;
	growthhack: string;
	created_at: string;
	productid: string | null;
	category: string | null;
	decision: string | null;
};

const toGateEvent = (row: EventRow): GateEvent => ({
	appid: row.appid,
	customid: row.customid,
	userkey: row.userkey,
	eventname: row.eventname,
	transactionvalue: row.transactionvalue,
	extrainfo: row.extrainfo,
	campaignid: row.campaignid,
	growthhack: row.growthhack,
	createdAt: row.created_at,
	productid: row.productid,
	category: row.category,
	decision: row.decision === null ? null : parseDecision(row.decision, "event gate events"),
});

/**
 * The decision as the gate stores it: the friend's snapshot without the
 * person's email, name and image (an erasure need not find them here); the
 * Worker fills them from the user's profile when it reads the decision back.
 */
export function withoutPerson(decision: OwnedGrant[]): OwnedGrant[] {
	return decision.map((g) => ({ ...g, grant: { ...g.grant, friend: { ...g.grant.friend, email: null, name: null, profileimage: null } } }));
}

export class EventGate extends DurableObject<Env> {
	private readonly sql: SqlStorage;
	private readonly storage: DurableObjectStorage;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, instrumentEnv(env, "ledger"));
		this.storage = countingStorage(ctx.storage, env);
		this.sql = this.storage.sql;
		for (const statement of SCHEMA) this.sql.exec(statement);
	}

	private read(appid: string, customid: string): GateEvent | null {
		const row = this.sql.exec<EventRow>("SELECT * FROM events WHERE appid = ? AND customid = ?", appid, customid).toArray()[0];
		return row ? toGateEvent(row) : null;
	}

	/** The event of an app with events from before the gate, looked up in D1 once and kept (null: D1 has none). */
	private async fromD1(appid: string, customid: string): Promise<GateEvent | null> {
		const found = await findStoredEvent(this.env.DB, appid, customid);
		if (!found) return null;
		// Kept as D1 has it (its decision, possibly null: decided from the rules of its time), without a pending row:
		// D1's own completion pass (db/event-grants.ts) still owns the grants of events it recorded.
		this.storage.transactionSync(() => this.insert(found));
		return this.read(appid, customid);
	}

	private insert(event: GateEvent): void {
		this.sql.exec(
			`INSERT INTO events (appid, customid, userkey, eventname, transactionvalue, extrainfo, campaignid, growthhack, created_at,
			   productid, category, decision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			event.appid,
			event.customid,
			event.userkey,
			event.eventname,
			event.transactionvalue,
			event.extrainfo,
			event.campaignid,
			event.growthhack,
			event.createdAt,
			event.productid,
			event.category,
			event.decision === null ? null : JSON.stringify(withoutPerson(event.decision)),
		);
	}

	/** The event stored under (app, customid), or null. `legacy`: the app has events from before the gate, so a miss asks D1. */
	async peek(appid: string, customid: string, legacy: boolean): Promise<GateEvent | null> {
		return this.read(appid, customid) ?? (legacy ? this.fromD1(appid, customid) : null);
	}

	/**
	 * Claims (app, customid) for `event` with its decision, unless it is
	 * claimed already: answers the stored event, and whether this call
	 * claimed it. The claim and its pending row are one transaction; the
	 * object runs one call's synchronous part at a time, so of concurrent
	 * claims exactly one inserts. An app without events from before the gate
	 * (not `legacy`) has no await here at all: the read and the insert are one
	 * transaction of three statements (issue 49, "one call fewer": five before,
	 * a read before it and one after it).
	 */
	async claim(event: GateEvent, legacy: boolean): Promise<{ isNew: boolean; event: GateEvent }> {
		if (legacy) {
			const stored = await this.peek(event.appid, event.customid, legacy);
			if (stored) return { isNew: false, event: stored };
		}
		// Read inside the transaction: for a legacy app, another claim may have run while this one awaited D1.
		const stored = this.storage.transactionSync(() => {
			const found = this.read(event.appid, event.customid);
			if (found) return found;
			this.insert(event);
			this.sql.exec(
				"INSERT INTO pending (failures, created_at, appid, customid) VALUES (0, ?, ?, ?)",
				event.createdAt,
				event.appid,
				event.customid,
			);
			return null;
		});
		return stored ? { isNew: false, event: stored } : { isNew: true, event };
	}

	/**
	 * The backfill (operations/event-gate-backfill.ts): events recorded in D1 before the gates, kept here as D1 has
	 * them, without a pending row (D1's own completion pass owns the grants of events it recorded). An event
	 * already here stays as it is.
	 */
	async remember(events: GateEvent[]): Promise<void> {
		this.storage.transactionSync(() => {
			for (const event of events) this.insert(event);
		});
	}

	/** Up to `limit` pending events recorded before `cutoff` (ISO), those that failed less first, then the oldest. */
	async pendingBefore(cutoff: string, limit: number): Promise<PendingEvent[]> {
		const rows = this.sql
			.exec<EventRow & { failures: number }>(
				`SELECT e.*, p.failures FROM pending p JOIN events e ON e.appid = p.appid AND e.customid = p.customid
				 WHERE p.created_at < ? ORDER BY p.failures, p.created_at LIMIT ?`,
				cutoff,
				limit,
			)
			.toArray();
		return rows.map((row) => ({ ...toGateEvent(row), failures: row.failures }));
	}

	/** Applies a completion pass's outcomes in one transaction: confirmed and refused leave `pending`, failed count one more. */
	async settle(settlements: Settlement[]): Promise<void> {
		this.storage.transactionSync(() => {
			for (const s of settlements) {
				this.sql.exec(
					"DELETE FROM pending WHERE failures = ? AND created_at = ? AND appid = ? AND customid = ?",
					s.failures,
					s.createdAt,
					s.appid,
					s.customid,
				);
				if (s.outcome === "failed") {
					this.sql.exec(
						"INSERT INTO pending (failures, created_at, appid, customid) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
						s.failures + 1,
						s.createdAt,
						s.appid,
						s.customid,
					);
				}
				// An event refused for good (its user erased) keeps no free text of the person.
				if (s.outcome === "refused") this.redactOne(s.appid, s.customid);
			}
		});
	}

	private redactOne(appid: string, customid: string): void {
		this.sql.exec("UPDATE events SET extrainfo = NULL WHERE appid = ? AND customid = ? AND extrainfo IS NOT NULL", appid, customid);
	}

	/**
	 * Up to `limit` events of `appid` naming campaign `campaignid` still pending here (a campaign's deletion,
	 * admin/campaigns.ts, asks D1 which of them are done).
	 */
	async pendingOfCampaign(appid: string, campaignid: number, limit: number): Promise<string[]> {
		return this.sql
			.exec<{ customid: string }>(
				`SELECT e.customid FROM pending p JOIN events e ON e.appid = p.appid AND e.customid = p.customid
				 WHERE e.appid = ? AND e.campaignid = ? LIMIT ?`,
				appid,
				campaignid,
				limit,
			)
			.toArray()
			.map((r) => r.customid);
	}

	/** An erasure (db/privacy.ts): the free text of the person's events of this shard goes. */
	async redact(appid: string, customids: string[]): Promise<void> {
		this.storage.transactionSync(() => {
			for (const customid of customids) this.redactOne(appid, customid);
		});
	}

	/** A test app's reset (admin/test-data.ts): deletes up to `limit` of its events here; answers how many went. */
	async forgetApp(appid: string, limit: number): Promise<number> {
		return this.storage.transactionSync(() => {
			const doomed = this.sql
				.exec<{ customid: string }>("SELECT customid FROM events WHERE appid = ? LIMIT ?", appid, limit)
				.toArray()
				.map((r) => r.customid);
			for (const customid of doomed) {
				this.sql.exec("DELETE FROM events WHERE appid = ? AND customid = ?", appid, customid);
				this.sql.exec("DELETE FROM pending WHERE appid = ? AND customid = ?", appid, customid);
			}
			return doomed.length;
		});
	}
}

/** The typed stub of the gate object of shard `n`. */
export const gateStub = (env: Env, shard: number) => env.EVENT_GATE.getByName(gateName(shard));

/** The typed stub of the gate that holds (app, customid). */
export const eventGateFor = (env: Env, appid: string, customid: string) => gateStub(env, gateShard(appid, customid));
