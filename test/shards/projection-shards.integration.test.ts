import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { Layout } from "../../src/db/app-layout";
import type { ProjectedRow, ProjectionMessage } from "../../src/db/projection-batch";
import { shardPool } from "../../src/db/shards";
import { newAppId } from "../../src/domain/ids";
import { shardIndex } from "../../src/domain/shard";
import { withBindings } from "../../src/instrument/d1-metrics";
import { ledgerFor } from "../../src/ledger/stub";
import { projectionQueue } from "../../src/outbox/projection-consumer";
import { d1DownFrom } from "../http/d1-down";
import { admin, createApp } from "../support/api";
import { consumeProjection, projectedRow } from "../support/projection";

// Issue 50 phase 2b-1: the projection consumer writes a sharded app's reward
// rows, the stats counters they move and its referrers' board counters to
// the shard of each row's owner, one D1 batch per shard, and an app in the
// "one" layout's to the control database as before. The same messages for
// an app of each layout leave the same rows: the union of the shards' rows
// equals the one database's, their counters summed equal its counters.

/** An app of `layout`, made by hand (no campaign needed: the consumer reads only its time zone and layout). */
async function appOf(layout: Layout): Promise<string> {
	const appid = newAppId();
	const now = new Date().toISOString();
	await env.DB.prepare(
		`INSERT INTO apps (appid, name, apikey, privatekey_hash, webhook_secret, created_at, updated_at, layout)
		 VALUES (?, 'projection layout test', ?, '', 'whsec_dGVzdA==', ?, ?, ?)`,
	)
		.bind(appid, `ak_${appid}`, now, now, layout)
		.run();
	return appid;
}

const REFERRERS = 24;
const FRIENDS_EACH = 3;

const message = (appid: string, userkey: string, rows: ProjectedRow[]): ProjectionMessage => ({
	projection: 1,
	appid,
	userkey,
	sentAt: Date.now(),
	rewards: rows.map((r) => ({ id: r.seq, ref: `projection:${r.seq}`, row: r })),
	webhooks: [],
	audits: [],
});

/**
 * A history of queue batches: each referrer's rewards for its friends (the friend's own reward rides in the same
 * queue message, as issue 49's conversions send them), approvals, a rejection, a partial refund, a redemption, and
 * the first batch delivered again.
 */
function history(appid: string): ProjectionMessage[][] {
	const first: ProjectionMessage[] = [];
	const later: ProjectionMessage[] = [];
	for (let r = 0; r < REFERRERS; r++) {
		const referrer = `ref-${r}`;
		for (let f = 0; f < FRIENDS_EACH; f++) {
			const friend = `friend-${r}-${f}`;
			const at = `2026-11-2${f}T0${r % 10}:1${f}:00.000Z`;
			const own = message(appid, referrer, [
				projectedRow(f + 1, { friend_userkey: friend, status: "Pending", created_at: at, updated_at: at, amount: 500 + r }),
			]);
			const friends = message(appid, friend, [
				projectedRow(1, { usertype: "Friend", friend_userkey: "", status: "Approved", created_at: at, updated_at: at, amount: 250 }),
			]);
			first.push({ ...own, also: [friends] });
			// Approved later; every fifth rejected, every seventh refunded in part, every third redeemed in part.
			const status = (r * FRIENDS_EACH + f) % 5 === 0 ? "Rejected" : "Approved";
			const reversed = (r * FRIENDS_EACH + f) % 7 === 0 ? 200 : 0;
			const redeemed = (r * FRIENDS_EACH + f) % 3 === 0 ? 100 : 0;
			later.push(
				message(appid, referrer, [
					projectedRow(f + 1, {
						friend_userkey: friend,
						status,
						reversed,
						redeemed,
						version: 2,
						created_at: at,
						updated_at: "2026-11-28T12:00:00.000Z",
						amount: 500 + r,
					}),
				]),
			);
		}
	}
	return [first.slice(0, 40), first.slice(40), later, first];
}

const ROWS = {
	rewards: "SELECT rewarddtlid, userkey, campaignid, usertype, reward, rewardstatus, redeemed, version FROM rewards WHERE appid = ?",
	stats: "SELECT campaignid, slot, metric, unit, value FROM stats_slots WHERE appid = ?",
	counts: "SELECT campaignid, bucket, userkey, friends, earned, reached_at FROM leaderboard_counts WHERE appid = ?",
	levels: "SELECT campaignid, bucket, friends, referrers FROM leaderboard_levels WHERE appid = ? AND referrers <> 0",
} as const;

type Row = Record<string, unknown>;
const read = async (db: D1Database, sql: string, appid: string) => (await db.prepare(sql).bind(appid).all<Row>()).results;
const sorted = (rows: Row[]) => rows.map((r) => JSON.stringify(r)).sort();

/** Counter rows summed by every column but `value` (the readers' sum over shards). */
function summed(rows: Row[], value: string): string[] {
	const sums = new Map<string, number>();
	for (const row of rows) {
		const { [value]: n, ...key } = row;
		const k = JSON.stringify(key);
		sums.set(k, (sums.get(k) ?? 0) + Number(n));
	}
	return [...sums]
		.filter(([, n]) => Math.abs(n) > 1e-9)
		.map(([k, n]) => `${k}=${Math.round(n * 100)}`)
		.sort();
}

let one: string;
let sharded: string;

beforeAll(async () => {
	[one, sharded] = [await appOf("one"), await appOf("sharded")];
	for (const [i, batch] of history(one).entries()) await consumeProjection(batch, `one-${i}`);
	for (const [i, batch] of history(sharded).entries()) await consumeProjection(batch, `sharded-${i}`);
});

describe("the projection of a sharded app", () => {
	it("writes each row in the shard of its owner, every shard some, the control database none", async () => {
		const pool = await shardPool(env);
		for (const sql of Object.values(ROWS)) expect(await read(env.DB, sql, sharded)).toEqual([]);
		const perShard = await Promise.all(pool.shards.map((db) => read(db, ROWS.rewards, sharded)));
		for (const [shard, rows] of perShard.entries()) {
			expect(rows.length, `SHARD_${shard}`).toBeGreaterThan(0);
			for (const row of rows) expect(shardIndex(pool.count, sharded, String(row.userkey))).toBe(shard);
		}
		const counts = await Promise.all(pool.shards.map((db) => read(db, ROWS.counts, sharded)));
		for (const [shard, rows] of counts.entries())
			for (const row of rows) expect(shardIndex(pool.count, sharded, String(row.userkey))).toBe(shard);
		expect(perShard.flat()).toHaveLength(REFERRERS * FRIENDS_EACH * 2);
	});

	it("leaves the same rewards, stats, board counters and levels as one database", async () => {
		const pool = await shardPool(env);
		const union = async (sql: string) => (await Promise.all(pool.shards.map((db) => read(db, sql, sharded)))).flat();
		expect(sorted(await union(ROWS.rewards))).toEqual(sorted(await read(env.DB, ROWS.rewards, one)));
		expect(sorted(await union(ROWS.counts))).toEqual(sorted(await read(env.DB, ROWS.counts, one)));
		const stats = await read(env.DB, ROWS.stats, one);
		expect(stats.length).toBeGreaterThan(0);
		expect(summed(await union(ROWS.stats), "value")).toEqual(summed(stats, "value"));
		expect(summed(await union(ROWS.levels), "referrers")).toEqual(summed(await read(env.DB, ROWS.levels, one), "referrers"));
	});
});

describe("a shard down", () => {
	it("retries only the messages whose rows go to it; the others are written and acknowledged", async () => {
		const appid = await appOf("sharded");
		const pool = await shardPool(env);
		const messages = Array.from({ length: 16 }, (_, i) =>
			message(appid, `owner-${i}`, [projectedRow(1, { usertype: "Friend", friend_userkey: "", amount: 100 + i })]),
		);
		const onShard2 = new Set(messages.filter((m) => pool.numberFor(appid, m.userkey) === 2).map((m) => m.userkey));
		expect(onShard2.size).toBeGreaterThan(0);
		expect(onShard2.size).toBeLessThan(messages.length);
		const down = d1DownFrom(env.SHARD_2 as D1Database, 1);
		const batch = createMessageBatch(
			"referral-projection",
			messages.map((body, i) => ({ id: `down-${i}`, timestamp: new Date(), attempts: 1, body })),
		);
		const ctx = createExecutionContext();
		const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
		try {
			await projectionQueue(batch, withBindings(env, { SHARD_2: down.db }), ctx);
		} finally {
			warn.mockRestore();
		}
		const result = await getQueueResult(batch, ctx);
		const retried = new Set(result.retryMessages.map((m) => m.msgId));
		const acked = new Set(result.explicitAcks);
		for (const [i, m] of messages.entries()) {
			if (onShard2.has(m.userkey)) expect(retried.has(`down-${i}`), m.userkey).toBe(true);
			else expect(acked.has(`down-${i}`), m.userkey).toBe(true);
		}
		const written = (await Promise.all(pool.shards.map((db) => read(db, ROWS.rewards, appid)))).flat().map((r) => r.userkey);
		expect(written.sort()).toEqual(
			messages
				.map((m) => m.userkey)
				.filter((k) => !onShard2.has(k))
				.sort(),
		);
		// The queue's retry, once the shard is back, writes the rest.
		await consumeProjection(
			messages.filter((m) => onShard2.has(m.userkey)),
			"down-again",
		);
		const all = (await Promise.all(pool.shards.map((db) => read(db, ROWS.rewards, appid)))).flat();
		expect(all).toHaveLength(messages.length);
	});
});

describe("an erased referrer of a sharded app", () => {
	it("leaves no board counter in its shard, also for a reward that reaches the shard after the erasure", async () => {
		const app = await createApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const ref = (await app.api("register", { email: "eref@x.com" })).body;
		const friend = (await app.api("register", { email: "efr@x.com", referrercode: ref.referralcode })).body;
		const conversion = { userkey: friend.userkey, eventname: "Purchase", customid: `erase-${app.appid}`, growthhack: "SaaS_Referrals" };
		expect((await app.api("registerconversionevent", conversion)).status).toBe(200);
		await ledgerFor(env, app.appid, ref.userkey).flush();
		const home = (await shardPool(env)).for(app.appid, ref.userkey);
		const counters = () => read(home, "SELECT userkey FROM leaderboard_counts WHERE appid = ?", app.appid);
		expect(await counters()).not.toEqual([]);
		expect((await admin("DELETE", `/apps/${app.appid}/users/${ref.userkey}`)).status).toBe(200);
		expect(await counters()).toEqual([]);
		// A late message of the referrer's ledger, a reward for another friend: its row lands, no counter comes back.
		const late = projectedRow(99, {
			friend_userkey: "late-friend",
			created_at: new Date().toISOString(),
			updated_at: new Date().toISOString(),
		});
		await consumeProjection([message(app.appid, ref.userkey, [late])], "late");
		const rows = await read(home, "SELECT rewarddtlid FROM rewards WHERE appid = ?", app.appid);
		expect(rows.map((r) => r.rewarddtlid)).toContain(`${ref.userkey}-99`);
		expect(await counters()).toEqual([]);
	});
});
