import type { EventGate, GateEvent } from "../../src/ledger/event-gate";
import { rememberFriends } from "../../src/ledger/friends";
import { grantRewards } from "../../src/ledger/grant";
import type { RewardGrant } from "../../src/ledger/types";
import { grantOf } from "../ledger/support";

/**
 * A referrer's ledger with data in it, written by the ledger's own code
 * (the friends it keeps, the grants of their conversions), then analyzed:
 * the query-plan guard's `seeded` condition explains the ledger's statements
 * here, as SQLite plans them once `ANALYZE` or `PRAGMA optimize` ran on a
 * ledger in use (the condition in which a friends page's join scanned the
 * rewards table, issue 49 schema step 16). Statistics of real rows complement
 * the made-up ones of a large database (statistics.ts).
 */

/** 300 friends, 2,400 rewards over four rules (some held, suspicious, paid by Stripe, some the user's own as a friend). */
export const SEEDED = { friends: 300, rewards: 2_400, rules: [11, 12, 13, 14] } as const;

const friendKey = (i: number) => `useedfriend${String(i).padStart(9, "0")}`;

/** The n-th reward: a Referrer reward for friend n % friends mostly, every 20th the user's own Friend reward. */
function grantN(n: number): RewardGrant {
	const ruleid = SEEDED.rules[n % SEEDED.rules.length] ?? 11;
	const i = n % SEEDED.friends;
	const held = n % 10 === 0;
	return grantOf({
		key: `seed${n}:${ruleid}`,
		customid: `seed${n}`,
		ruleid,
		usertype: n % 20 === 0 ? "Friend" : "Referrer",
		eventname: n % 3 === 0 ? "Signup" : "Purchase",
		rewardtype: n % 7 === 0 ? "Stripe" : "InstoreCredits",
		status: held ? "UnderReview" : n % 19 === 0 ? "Suspicious" : "Approved",
		holdUntil: held ? "2099-01-01T00:00:00.000Z" : null,
		friend: { userkey: friendKey(i), email: `friend${i}@example.com`, name: `Friend ${i}`, profileimage: null },
	});
}

/** Writes the seeded ledger's rows (once: a ledger that has them is left as it is) and analyzes it. */
export function seedLedger(storage: DurableObjectStorage, appid: string, userkey: string): void {
	const sql = storage.sql;
	const have = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM rewards").one().n;
	if (have < SEEDED.rewards) {
		storage.transactionSync(() =>
			rememberFriends(
				sql,
				Array.from({ length: SEEDED.friends }, (_, i) => ({
					userkey: friendKey(i),
					userid: 1_000 + i,
					email: `friend${i}@example.com`,
					useraccountid: null,
					name: `Friend ${i}`,
					profileimage: null,
					status: i % 4 === 0 ? ("Converted" as const) : ("SignUp" as const),
					registeredAt: "2026-01-01T00:00:00.000Z",
					attributedAt: "2026-01-01T00:00:00.000Z",
				})),
				"attributed",
				{ priorFriends: 0 },
			),
		);
		// In transactions of 200 grants, as a busy referrer's conversions arrive (each grant is its own in production).
		for (let from = 0; from < SEEDED.rewards; from += 200)
			storage.transactionSync(() =>
				grantRewards(
					{ sql, appid, userkey, nowMs: Date.now() },
					Array.from({ length: 200 }, (_, k) => grantN(from + k + 1)),
				),
			);
	}
	sql.exec("ANALYZE");
}

/** An event gate's seeded events: 3,000 of 20 apps remembered (confirmed long ago), the last 200 claimed and pending. */
export const SEEDED_GATE = { events: 3_000, apps: 20, pending: 200 } as const;

/** The n-th seeded event of a gate: one of 20 apps, a purchase a minute from 2026-01-01. */
function eventN(n: number): GateEvent {
	return {
		appid: `app_seed${String(n % SEEDED_GATE.apps).padStart(12, "0")}`,
		customid: `seed-order-${n}`,
		userkey: `useeduser${String(n % 500).padStart(11, "0")}`,
		eventname: n % 3 === 0 ? "Signup" : "Purchase",
		transactionvalue: n % 3 === 0 ? null : 10 + (n % 90),
		extrainfo: null,
		campaignid: 1 + (n % 3),
		growthhack: "SaaS_Referrals",
		createdAt: new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString(),
		decision: [],
		productid: null,
		category: null,
	};
}

/**
 * Writes a gate's seeded events through its own methods (once: a gate that has them is left as it is) and
 * analyzes it: remembered as the backfill keeps D1's older events, then claimed as conversions arrive.
 */
export async function seedGate(gate: EventGate, sql: SqlStorage): Promise<void> {
	const have = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n;
	if (have < SEEDED_GATE.events) {
		const remembered = SEEDED_GATE.events - SEEDED_GATE.pending;
		for (let from = 0; from < remembered; from += 500)
			await gate.remember(Array.from({ length: Math.min(500, remembered - from) }, (_, k) => eventN(from + k)));
		for (let n = remembered; n < SEEDED_GATE.events; n++) await gate.claim(eventN(n), false);
	}
	sql.exec("ANALYZE");
}
