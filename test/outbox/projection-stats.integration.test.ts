import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ProjectedRow, type ProjectionMessage, writeProjectionBatch } from "../../src/db/projection-batch";
import { newAppId, newUserKey } from "../../src/domain/ids";
import { projectedRow } from "../support/projection";

/**
 * Issue 33, rows written: the projection queue's batch counts the stats of
 * the rewards that are once in it in one statement per 100 (db/stats.ts,
 * batchRewardCounters), summed per quarter-hour row, instead of one
 * statement each. The counters must be exactly those of writing the same
 * messages one at a time (each reward compared with the projection before
 * it): new rewards, a change of an amount, a rejection, a redemption, a
 * reward twice in one batch at two versions, and a message written again.
 */

const SLOT = "2026-11-27T00:0";

const row = (seq: number, overrides: Partial<ProjectedRow> = {}): ProjectedRow =>
	projectedRow(seq, {
		usertype: "Friend",
		amount: 250,
		created_at: `${SLOT}1:00.000Z`,
		updated_at: `${SLOT}1:00.000Z`,
		...overrides,
	});

const message = (appid: string, userkey: string, rows: ProjectedRow[]): ProjectionMessage => ({
	projection: 1,
	appid,
	userkey,
	sentAt: Date.now(),
	rewards: rows.map((r) => ({ id: r.seq, ref: `projection:${r.seq}`, row: r })),
	webhooks: [],
	audits: [],
});

/** Three batches of messages of two users (`a`, `b`) of an app: what the projection queue may deliver, replays included. */
function batches(appid: string, a: string, b: string): ProjectionMessage[][] {
	return [
		[message(appid, a, [row(1), row(2, { amount: 1000 })]), message(appid, b, [row(1, { rewardunit: "points", amount: 7 })])],
		[
			// Reward a-1 twice at two versions (an entry sent again with a change committed meanwhile), then redeemed.
			message(appid, a, [row(1, { version: 2, amount: 300, updated_at: `${SLOT}4:00.000Z` })]),
			message(appid, a, [row(1, { version: 3, amount: 300, redeemed: 120, updated_at: "2026-11-27T00:31:00.000Z" })]),
			// Rejected, and a new reward in another campaign.
			message(appid, b, [row(1, { rewardunit: "points", amount: 7, status: "Rejected", version: 2 }), row(2, { campaignid: 2 })]),
			// The first batch's message of a again: older versions change nothing.
			message(appid, a, [row(1), row(2, { amount: 1000 })]),
		],
		[message(appid, a, [row(2, { amount: 1000 })]), message(appid, b, [row(3, { amount: 5, updated_at: `${SLOT}2:00.000Z` })])],
	];
}

const statsOf = async (appid: string) =>
	(
		await env.DB.prepare(
			"SELECT campaignid, slot, metric, unit, value FROM stats_slots WHERE appid = ? ORDER BY campaignid, slot, metric, unit",
		)
			.bind(appid)
			.all()
	).results;

/** Writes the batches, summing the rows D1 says the stats statements wrote. */
async function write(list: ProjectionMessage[][]): Promise<number> {
	const proto = Object.getPrototypeOf(env.DB) as { batch: D1Database["batch"] };
	const batch = proto.batch;
	let statsRows = 0;
	proto.batch = async function (this: D1Database, statements: D1PreparedStatement[]) {
		const results = await batch.call(this, statements);
		statements.forEach((s, i) => {
			if (String(Reflect.get(s, "statement") ?? "").includes("INSERT INTO stats_slots")) statsRows += results[i]?.meta.rows_written ?? 0;
		});
		return results;
	} as D1Database["batch"];
	try {
		for (const messages of list) await writeProjectionBatch(env.DB, messages, new Map(), new Date().toISOString());
	} finally {
		proto.batch = batch;
	}
	return statsRows;
}

describe("the projection batch's stats counters", () => {
	it("count exactly what writing each message alone counts, in fewer rows", async () => {
		const [one, many] = [newAppId(), newAppId()];
		// Users of their own in each app: a reward's id (userkey-seq) is the projection's primary key.
		const alone = await write(batches(one, newUserKey(), newUserKey()).flatMap((list) => list.map((m) => [m])));
		const together = await write(batches(many, newUserKey(), newUserKey()));
		const expected = [
			{ campaignid: 1, slot: `${SLOT}0`, metric: "reward_amount", unit: "USD", value: 13.05 },
			{ campaignid: 1, slot: `${SLOT}0`, metric: "reward_amount", unit: "points", value: 0 },
			{ campaignid: 1, slot: `${SLOT}0`, metric: "rewards_created", unit: "", value: 4 },
			{ campaignid: 1, slot: "2026-11-27T00:30", metric: "redeemed", unit: "USD", value: 1.2 },
			{ campaignid: 2, slot: `${SLOT}0`, metric: "reward_amount", unit: "USD", value: 2.5 },
			{ campaignid: 2, slot: `${SLOT}0`, metric: "rewards_created", unit: "", value: 1 },
		];
		expect(await statsOf(one)).toEqual(expected);
		expect(await statsOf(many)).toEqual(expected);
		expect(together).toBeLessThan(alone);
	});
});
