import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { erasedFriendsOf, markForgottenRewards } from "../../src/db/ledger-restore";
import { projectionStatement } from "../../src/db/projection";
import { projectedRow } from "../../src/ledger/projection-message";
import type { RestoreStarted } from "../../src/ledger/restore";
import type { RewardRow } from "../../src/ledger/schema";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, type createApp, request } from "../support/api";
import { createOneDatabaseApp } from "../support/layout";

/**
 * Issue 51: restore of one user's ledger by Durable Objects point-in-time
 * recovery. Local workerd has the storage methods but its back-end "does not
 * implement point-in-time recovery" (they throw), so the route's restore step
 * is checked for its refusals and its 501 here, and the resync that follows a
 * restore is driven directly, on a ledger whose tables are put back to an
 * earlier state by hand (what the platform's restore does to the storage).
 */

const restorePath = (appid: string, userkey: string) => `/apps/${appid}/users/${userkey}/ledger:restore`;
const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000).toISOString();

/** An app whose referrer earns $50 (approved, in the wallet) per friend's purchase. */
async function referrerWithRewards(friendCount: number) {
	const app = await createOneDatabaseApp({
		campaignstartdate: "2020-01-01T00:00:00Z",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 50, rewardunit: "USD" }],
	});
	const referrer = (await app.api("register", { email: "lr.ref@x.com", name: "Ref" })).body as { userkey: string; referralcode: string };
	const friends: string[] = [];
	for (let i = 0; i < friendCount; i++) {
		const friend = (await app.api("register", { email: `lr.f${i}@x.com`, name: `Friend ${i}`, referrercode: referrer.referralcode })).body;
		friends.push(friend.userkey);
	}
	return { app, referrer, friends };
}

const purchase = (app: Awaited<ReturnType<typeof createApp>>, userkey: string, customid: string) =>
	app.api("registerconversionevent", { userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals", transactionvalue: "10" });

type Tables = { rewards: Record<string, unknown>[]; balances: Record<string, unknown>[] };

/** The ledger's rewards and balances as they are now: what a restore to this moment would bring back. */
const snapshot = (appid: string, userkey: string): Promise<Tables> =>
	runInDurableObject(ledgerFor(env, appid, userkey), async (_i, state) => ({
		rewards: state.storage.sql.exec("SELECT * FROM rewards").toArray(),
		balances: state.storage.sql.exec("SELECT * FROM balances").toArray(),
	}));

/** What the platform's restore does to those tables: puts them back as they were (the outbox as it is: empty after a flush). */
function putBack(appid: string, userkey: string, tables: Tables): Promise<void> {
	return runInDurableObject(ledgerFor(env, appid, userkey), async (_i, state) => {
		const sql = state.storage.sql;
		state.storage.transactionSync(() => {
			for (const [table, rows] of Object.entries(tables)) {
				sql.exec(`DELETE FROM ${table}`);
				for (const row of rows) {
					const columns = Object.keys(row);
					sql.exec(
						`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
						...columns.map((c) => row[c]),
					);
				}
			}
		});
	});
}

const projected = async (appid: string, userkey: string) =>
	(
		await env.DB.prepare(
			"SELECT rewarddtlid, redeemed, rewardstatus, version, comment FROM rewards WHERE appid = ? AND userkey = ? ORDER BY rewarddtlid",
		)
			.bind(appid, userkey)
			.all<{ rewarddtlid: string; redeemed: number; rewardstatus: string; version: number; comment: string | null }>()
	).results;

describe("POST .../users/{userkey}/ledger:restore", () => {
	it("answers 501 restore_unavailable naming why where the runtime has no point-in-time recovery, and changes nothing", async () => {
		const { app, referrer, friends } = await referrerWithRewards(1);
		await purchase(app, friends[0] ?? "", "lr-501");
		const before = await snapshot(app.appid, referrer.userkey);
		const res = await admin("POST", restorePath(app.appid, referrer.userkey), { at: minutesAgo(5) });
		expect(res.status).toBe(501);
		expect(res.body.errorcode).toBe("restore_unavailable");
		// The platform's own words: local workerd's back-end "does not implement point-in-time recovery".
		expect(res.body.message).toMatch(/point-in-time recovery/);
		expect(await snapshot(app.appid, referrer.userkey)).toEqual(before);
		const audit = (await admin<{ entries: { action: string }[] }>("GET", `/apps/${app.appid}/audit`)).body.entries;
		expect(audit.some((e) => e.action === "ledger.restore")).toBe(false);
	});

	it("refuses a time outside the last 30 days, a time in the future, both or neither of at and bookmark: 400 naming the field", async () => {
		const { app, referrer } = await referrerWithRewards(0);
		const path = restorePath(app.appid, referrer.userkey);
		for (const [payload, pattern] of [
			[{ at: minutesAgo(31 * 24 * 60) }, /30 days/],
			[{ at: new Date(Date.now() + 3_600_000).toISOString() }, /future/],
			[{ at: "yesterday" }, /ISO 8601/],
			[{ at: minutesAgo(5), bookmark: "0000" }, /exactly one/],
			[{}, /exactly one/],
			[{ at: minutesAgo(5), extra: 1 }, /extra/],
		] as const) {
			const res = await admin("POST", path, payload);
			expect(res.status, JSON.stringify(payload)).toBe(400);
			expect(res.body.errorcode).toBe("validation_failed");
			expect(res.body.message).toMatch(pattern);
		}
	});

	it("is the superuser's alone: an app's owner token is 403, naming superuser", async () => {
		const { app, referrer } = await referrerWithRewards(0);
		const token = (await admin("POST", `/apps/${app.appid}/tokens`, { name: "lr-owner", role: "owner" })).body.token as string;
		const res = await fetchAdmin(token, restorePath(app.appid, referrer.userkey), { at: minutesAgo(5) });
		expect(res.status).toBe(403);
		expect((await res.json<{ needed: string }>()).needed).toBe("superuser");
		// Another app's token learns nothing of this app: 404, as for every route of an app it does not hold.
		const other = await createOneDatabaseApp();
		const otherToken = (await admin("POST", `/apps/${other.appid}/tokens`, { name: "lr-other", role: "owner" })).body.token as string;
		const crossing = await fetchAdmin(otherToken, restorePath(app.appid, referrer.userkey), { at: minutesAgo(5) });
		expect(crossing.status).toBe(404);
		expect((await crossing.json<{ errorcode: string }>()).errorcode).toBe("app_not_found");
	});

	it("refuses a time before a Stripe payout that was sent (409 restore_past_payout): it could be paid again; a time after it goes on", async () => {
		const { app, referrer, friends } = await referrerWithRewards(1);
		await purchase(app, friends[0] ?? "", "lr-payout");
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		const sentAt = Date.now() - 10 * 60_000;
		// A payout of reward 1 sent ten minutes ago, as the payouts consumer records it (payout-outcome.ts).
		await runInDurableObject(ledger, async (_i, state) => {
			state.storage.sql.exec(
				"INSERT INTO payouts (seq, n, amount, state, customer, stripe_id, sent_at, updated_at) VALUES (1, 1, 5000, 'paid', 'cus_lr', 'cbtxn_lr', ?, ?)",
				sentAt,
				sentAt,
			);
		});
		const before = await snapshot(app.appid, referrer.userkey);
		const refused = await admin("POST", restorePath(app.appid, referrer.userkey), { at: minutesAgo(20) });
		expect(refused.status).toBe(409);
		expect(refused.body.errorcode).toBe("restore_past_payout");
		expect(refused.body.message).toMatch(/1 Stripe payout/);
		expect(await snapshot(app.appid, referrer.userkey)).toEqual(before);
		// After the payout: on to the platform (which has no point-in-time recovery here).
		expect((await admin("POST", restorePath(app.appid, referrer.userkey), { at: minutesAgo(5) })).status).toBe(501);
	});

	it("refuses an erased user (410 user_erased) and an unknown one (404), before asking the platform", async () => {
		const { app, referrer } = await referrerWithRewards(0);
		expect((await admin("DELETE", `/apps/${app.appid}/users/${referrer.userkey}`)).status).toBe(200);
		const erased = await admin("POST", restorePath(app.appid, referrer.userkey), { at: minutesAgo(5) });
		expect(erased.status).toBe(410);
		expect(erased.body.errorcode).toBe("user_erased");
		const unknown = await admin("POST", restorePath(app.appid, "no-such-user"), { at: minutesAgo(5) });
		expect(unknown.status).toBe(404);
		expect(unknown.body.errorcode).toBe("user_not_found");
	});
});

function fetchAdmin(token: string, path: string, payload: unknown): Promise<Response> {
	return request(`/admin/v1${path}`, {
		method: "POST",
		headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
		body: JSON.stringify(payload),
	});
}

describe("the resync after a restore (driven directly)", () => {
	it("brings the balance and D1's projection back to before a redemption, forgets later rewards, never reuses their ids", async () => {
		const { app, referrer, friends } = await referrerWithRewards(3);
		const [a, b, c] = friends as [string, string, string];
		await purchase(app, a, "lr-1");
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		await ledger.flush();
		const balanceOf = async () => {
			const answer = (await app.api("getuserbalance", { userkey: referrer.userkey, campaignid: String(app.campaignid) })).body;
			const { requestid: _r, ...balance } = answer;
			return balance;
		};
		const balanceAtRestorePoint = await balanceOf();
		const restorePoint = await snapshot(app.appid, referrer.userkey);
		// After the restore point: a redemption and a second reward, both in D1.
		expect((await app.api("redeemrewards", { userkey: referrer.userkey, amount: "30" })).body.success).toBe(true);
		await purchase(app, b, "lr-2");
		await ledger.flush();
		const redeemedBalance = await balanceOf();
		const before = await projected(app.appid, referrer.userkey);
		expect(before.map((r) => [r.redeemed, r.rewardstatus])).toEqual([
			[30, "Approved"],
			[0, "Approved"],
		]);
		const former = await runInDurableObject(ledger, async (_i, state) =>
			state.storage.sql.exec<{ seq: number; version: number }>("SELECT MAX(seq) AS seq, MAX(version) AS version FROM rewards").one(),
		);
		const started: Omit<RestoreStarted, "restoredto" | "undobookmark"> = { formermaxseq: former.seq, formermaxversion: former.version };

		await putBack(app.appid, referrer.userkey, restorePoint);
		const resynced = await ledger.restoreLedger(app.appid, referrer.userkey, { step: "resync", ...started, erasedfriends: [] });
		expect(resynced).toMatchObject({ ok: true, rewards: 1, forgotten: { from: 2, to: 2 }, reerased: 0 });
		if (!resynced.ok || !("epoch" in resynced)) throw new Error("no resync");

		// The ledger: the redemption is undone, the later reward gone.
		expect(redeemedBalance).not.toEqual(balanceAtRestorePoint);
		expect(await balanceOf()).toEqual(balanceAtRestorePoint);
		expect((await ledger.listRewards()).map((r) => [r.rewarddtlid, r.redeemed])).toEqual([[`${referrer.userkey}-1`, 0]]);
		// D1: the restored row overwrote the newer projection (its version raised by the epoch), redeemed back to 0.
		const after = await projected(app.appid, referrer.userkey);
		expect(after[0]).toMatchObject({ rewarddtlid: `${referrer.userkey}-1`, redeemed: 0, rewardstatus: "Approved" });
		expect(after[0]?.version).toBeGreaterThan(former.version);
		// The forgotten reward is marked in D1, above any version a late message of the old ledger could carry.
		const forgotten = resynced.forgotten ?? { from: 0, to: 0 };
		expect(
			await markForgottenRewards(env.DB, app.appid, referrer.userkey, forgotten, resynced.epoch, new Date().toISOString(), "forgotten"),
		).toBe(1);
		const stale = { ...(await staleRow(ledger)), version: former.version };
		await env.DB.batch([projectionStatement(env.DB, app.appid, referrer.userkey, stale)]);
		expect((await projected(app.appid, referrer.userkey)).map((r) => [r.rewarddtlid, r.redeemed, r.rewardstatus])).toEqual([
			[`${referrer.userkey}-1`, 0, "Approved"],
			[`${referrer.userkey}-2`, 0, "Rejected"],
		]);
		// The next reward takes a new number: the forgotten one's id is never given again.
		await purchase(app, c, "lr-3");
		expect((await ledger.listRewards()).map((r) => r.rewarddtlid)).toEqual([`${referrer.userkey}-1`, `${referrer.userkey}-3`]);
		await ledger.flush();
		expect((await projected(app.appid, referrer.userkey)).map((r) => r.rewarddtlid)).toEqual([
			`${referrer.userkey}-1`,
			`${referrer.userkey}-2`,
			`${referrer.userkey}-3`,
		]);
	});

	it("erases again the friends erased since the restore time, found in D1", async () => {
		const { app, referrer, friends } = await referrerWithRewards(1);
		const [a] = friends as [string];
		await purchase(app, a, "lr-erase");
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		await ledger.flush();
		const restorePoint = await snapshot(app.appid, referrer.userkey);
		expect(JSON.stringify(restorePoint.rewards)).toContain("lr.f0@x.com");
		// The friends page's rows as the restore point had them (issue 49 piece 4, ledger/friends.ts).
		const friendsTable = (sql: SqlStorage) => sql.exec("SELECT * FROM friends").toArray();
		const friendsThen = await runInDurableObject(ledger, async (_i, state) => friendsTable(state.storage.sql));
		expect(JSON.stringify(friendsThen)).toContain("lr.f0@x.com");
		expect((await admin("DELETE", `/apps/${app.appid}/users/${a}`)).status).toBe(200);
		await putBack(app.appid, referrer.userkey, restorePoint);
		await runInDurableObject(ledger, async (_i, state) => {
			for (const row of friendsThen) {
				const columns = Object.keys(row);
				state.storage.sql.exec(
					`INSERT OR REPLACE INTO friends (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
					...Object.values(row),
				);
			}
		});
		const erasedfriends = await erasedFriendsOf(env.DB, app.appid, referrer.userkey);
		expect(erasedfriends).toEqual([a]);
		const resynced = await ledger.restoreLedger(app.appid, referrer.userkey, {
			step: "resync",
			formermaxseq: 1,
			formermaxversion: 1,
			erasedfriends,
		});
		expect(resynced).toMatchObject({ ok: true, reerased: 1 });
		expect(JSON.stringify(await snapshot(app.appid, referrer.userkey))).not.toContain("lr.f0@x.com");
		// The restored friends are forgotten, and the page fills them from D1 again: the erased friend has no values.
		expect(await runInDurableObject(ledger, async (_i, state) => friendsTable(state.storage.sql))).toEqual([]);
		const page = await app.api("getfriendsandrewards", { userkey: referrer.userkey });
		expect(page.body.friends).toContainEqual(expect.objectContaining({ userkey: a, email: "", name: "" }));
		expect(JSON.stringify(await runInDurableObject(ledger, async (_i, state) => friendsTable(state.storage.sql)))).not.toContain(
			"lr.f0@x.com",
		);
		// Run again (a restore retried, or restored twice): the versions are set to the new epoch, never summed toward 2^53.
		const again = await ledger.restoreLedger(app.appid, referrer.userkey, {
			step: "resync",
			formermaxseq: 1,
			formermaxversion: 1,
			erasedfriends,
		});
		if (!again.ok || !("epoch" in again) || !resynced.ok || !("epoch" in resynced)) throw new Error("no resync");
		expect(again.epoch).toBeGreaterThan(resynced.epoch);
		expect(again.epoch).toBeLessThan(resynced.epoch + 60_000);
		const versions = (await snapshot(app.appid, referrer.userkey)).rewards.map((r) => r.version);
		expect(versions).toEqual([again.epoch]);
		expect((await projected(app.appid, referrer.userkey)).map((r) => r.version)).toEqual([again.epoch]);
	});
});

/** The projected row of reward 2 as the old ledger last sent it (a late message of the projection queue). */
async function staleRow(ledger: ReturnType<typeof ledgerFor>) {
	return runInDurableObject(ledger, async (_i, state) => {
		const row = state.storage.sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = 1").one();
		return { ...projectedRow(row), seq: 2, redeemed: 0, status: "Approved" };
	});
}
