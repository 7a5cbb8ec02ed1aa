import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrateLedger } from "../../src/ledger/migrate";
import { erasePersonInLedger } from "../../src/ledger/privacy";
import { rewardsForFriends } from "../../src/ledger/reads";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { NO_FRIEND_INDEX_STEP_16 } from "../../src/ledger/schema-step-16";
import { dropAll, recording, rewardScans } from "../support/ledger-sql";
import { freshLedger, grantOf } from "./support";

/**
 * Ledger schema step 16 (issue 49, rows written per conversion): no
 * rewards_friend. A ledger written at step 15 upgrades, reads the same by
 * friend afterwards (the page of a referrer's friends, an erasure), and a
 * Referrer reward then writes 4 rows, not 5.
 */

/** The version before step 16 (its index in the list), so the test holds if the step is renumbered at a merge. */
const BEFORE_16 = LEDGER_MIGRATIONS.indexOf(NO_FRIEND_INDEX_STEP_16);

/** An approved wallet reward of rule `ruleid`: in its row, its event key, rewards_rule_friend, rewards_wallet (and rewards_friend before step 16). */
function insertReward(sql: SqlStorage, n: number, ruleid: number, usertype: "Referrer" | "Friend", friend: string): number {
	return sql.exec(
		`INSERT INTO rewards (key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, campaignid, campaignname,
		   growthhack, friend_userkey, friend_email, friend_name, created_at, updated_at)
		 VALUES (?, ?, ?, 'Purchase', ?, ?, 'USD', 'InstoreCredits', 'Approved', 1, 'c', 'g', ?, ?, 'Name', '2026-01-01', '2026-01-01')`,
		`e${n}:${ruleid}`,
		ruleid,
		`e${n}`,
		usertype,
		n * 100,
		friend,
		`${friend}@example.com`,
	).rowsWritten;
}

/** What the page read before step 16: each friend's Referrer rewards, newest first, read plainly. */
function expectedPage(sql: SqlStorage, friends: string[], limit: number) {
	return Object.fromEntries(
		friends.map((friend) => {
			const seqs = sql
				.exec<{ seq: number }>("SELECT seq FROM rewards WHERE friend_userkey = ? AND usertype = 'Referrer' ORDER BY seq DESC", friend)
				.toArray()
				.map((r) => r.seq);
			return [friend, { total: seqs.length, seqs: seqs.slice(0, limit) }];
		}),
	);
}

const pageSeqs = (page: ReturnType<typeof rewardsForFriends>) =>
	Object.fromEntries(
		Object.entries(page).map(([friend, { total, rewards }]) => [
			friend,
			{ total, seqs: rewards.map((r) => Number(r.rewarddtlid.split("-").at(-1))) },
		]),
	);

/** The plan lines of what `fn` ran that read the whole rewards table, with the data as it is. */
const scansOf = (sql: SqlStorage, fn: () => unknown) => rewardScans(sql, recording(sql, fn).statements);

describe("ledger schema step 16: no rewards_friend", () => {
	it("knows where step 16 is", () => {
		expect(BEFORE_16).toBeGreaterThanOrEqual(15);
	});

	it("a ledger written at step 15 upgrades and reads the same by friend; a Referrer reward then writes 4 rows, not 5", async () => {
		const { userkey, stub } = freshLedger();
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			dropAll(sql);
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, BEFORE_16));
			// 240 rewards over four rules and twelve friends (friend0 has none), and the user's own Friend rewards.
			const friends = Array.from({ length: 12 }, (_, i) => `friend${i}`);
			for (let n = 1; n <= 240; n++) {
				const written = insertReward(sql, n, [7, 3, 11, 5][n % 4] ?? 7, "Referrer", `friend${1 + (n % 11)}`);
				expect(written).toBe(5);
			}
			for (let n = 241; n <= 250; n++) insertReward(sql, n, 9, "Friend", userkey);
			const rewards = sql.exec("SELECT * FROM rewards ORDER BY seq").toArray();
			const before = expectedPage(sql, [...friends, userkey], 3);
			expect(before.friend0).toEqual({ total: 0, seqs: [] });
			expect(before.friend5?.total).toBe(22);

			// To step 16 (step 17 folds the event key into the rule index: schema-step-17.integration.test.ts).
			migrateLedger(state.storage, LEDGER_MIGRATIONS.slice(0, BEFORE_16 + 1));
			expect(sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one().value).toBe(String(BEFORE_16 + 1));
			expect(sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'rewards_friend'").one().n).toBe(0);
			expect(sql.exec("SELECT * FROM rewards ORDER BY seq").toArray()).toEqual(rewards);
			// The page: the same totals and the same newest rewards per friend; the user's own Friend rewards name no friend of it.
			expect(pageSeqs(rewardsForFriends(sql, userkey, [...friends, userkey], 3))).toEqual({ ...before, [userkey]: { total: 0, seqs: [] } });
			expect(pageSeqs(rewardsForFriends(sql, userkey, ["friend5"], 50))).toEqual(expectedPage(sql, ["friend5"], 50));

			// Every read by friend seeks, with 250 rewards here (the planner's choice depends on the data: a join it was free
			// to reorder scanned the rewards table and probed the page's rows).
			expect(scansOf(sql, () => rewardsForFriends(sql, userkey, friends, 3))).toEqual([]);
			expect(scansOf(sql, () => erasePersonInLedger(sql, "friend9", [], null))).toEqual([]);

			// A Referrer reward: its row, its event key, rewards_rule_friend and rewards_wallet.
			expect(insertReward(sql, 251, 3, "Referrer", "friend2")).toBe(4);
			expect(pageSeqs(rewardsForFriends(sql, userkey, ["friend2"], 1))).toEqual({ friend2: { total: 23, seqs: [251] } });

			// An erasure by friend still finds every reward naming the person: friend5's 22 as a friend, the user's 10 as its own
			// (and friend9's 22, erased above).
			expect(erasePersonInLedger(sql, "friend5", [], null).rewards).toBe(22);
			expect(erasePersonInLedger(sql, userkey, [], { at: "2026-02-01T00:00:00.000Z" }).rewards).toBe(10);
			const named = sql
				.exec<{ friend_userkey: string; n: number }>(
					"SELECT friend_userkey, COUNT(*) AS n FROM rewards WHERE friend_email IS NOT NULL GROUP BY friend_userkey ORDER BY friend_userkey",
				)
				.toArray();
			expect(named.map((r) => r.friend_userkey)).not.toContain("friend5");
			expect(named.map((r) => r.friend_userkey)).not.toContain("friend9");
			expect(named.map((r) => r.friend_userkey)).not.toContain(userkey);
			expect(named.reduce((sum, r) => sum + r.n, 0)).toBe(251 - 22 - 22 - 10);
		});
	});

	it("a new ledger has no rewards_friend, and its friends page reads its rewards by rule", async () => {
		const { appid, userkey, stub } = freshLedger();
		const friend = { userkey: "friend-a", email: "a@example.com", name: "A", profileimage: null };
		await stub.grant(appid, userkey, [
			grantOf({ key: "x1:4", customid: "x1", ruleid: 4, friend }),
			grantOf({ key: "x1:2", customid: "x1", ruleid: 2, friend }),
			grantOf({ key: "x2:4", customid: "x2", ruleid: 4, friend }),
		]);
		await runInDurableObject(stub, (_ledger, state) => {
			const sql = state.storage.sql;
			expect(sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'rewards_friend'").one().n).toBe(0);
			expect(pageSeqs(rewardsForFriends(sql, userkey, ["friend-a", "friend-b"], 2))).toEqual({
				"friend-a": { total: 3, seqs: [3, 2] },
				"friend-b": { total: 0, seqs: [] },
			});
		});
	});
});
