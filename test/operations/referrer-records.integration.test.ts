import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { LedgerWriter } from "../../src/ledger/writer";
import { COMPLETION_DELAY_MS, completeRecordedConversions } from "../../src/operations/conversion-completion";
import { admin, createApp } from "../support/api";
import { projectionRows } from "../support/layout";
import { until } from "../support/until";

/**
 * A conversion's referrer keeps no outbox entry for its new rewards (issue
 * 49, ledger/carried-records.ts): it hands their records back, and its
 * friend's ledger writes them in its own grant's transaction. The hole: a
 * referrer's grant that committed while the friend's transaction failed has
 * its records nowhere; a repeat of the event (the client's, or the completion
 * pass's) must end with the friend's ledger keeping them, the referrer's
 * grant finding its reward by key and handing its records back again. Real
 * ledgers, gate, D1 and queue; the failure is the friend's grant transaction
 * throwing once, right after the referrer's ledger answered.
 */

const writeOriginal = LedgerWriter.prototype.write;
afterEach(() => {
	LedgerWriter.prototype.write = writeOriginal;
});

/** The next write transaction of `userkey`'s ledger throws (once), as a crash or eviction mid-call would end it. */
function failNextWrite(userkey: string): { failed: () => boolean } {
	let failed = false;
	LedgerWriter.prototype.write = function <T>(this: LedgerWriter, fn: Parameters<LedgerWriter["write"]>[0], flushNow?: boolean | null): T {
		if (!failed && this.identity.userkey === userkey) {
			failed = true;
			throw new Error("injected: the friend's grant transaction failed after the referrer answered");
		}
		return writeOriginal.call(this, fn, flushNow) as T;
	};
	return { failed: () => failed };
}

const rules = [
	{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" },
	{ rewardusertype: "Friend", eventname: "Purchase", reward: 5, rewardunit: "USD" },
];

async function referral() {
	const app = await createApp({ rewardrules: rules });
	const referrer = (await app.api<{ userkey: string; referralcode: string }>("register", { email: "rr-ref@x.com" })).body;
	const friend = (await app.api<{ userkey: string }>("register", { email: "rr-fr@x.com", referrercode: referrer.referralcode })).body;
	const purchase = (customid: string) =>
		app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals" });
	return { ...app, referrer: referrer.userkey, friend: friend.userkey, purchase };
}

type App = Awaited<ReturnType<typeof referral>>;

/** D1's projected rewards of the app, in the control database or the owners' shards: (userkey, rewarddtlid, version). */
const projected = (appid: string) =>
	projectionRows<{ userkey: string; rewarddtlid: string; version: number }>(
		"SELECT userkey, rewarddtlid, version FROM rewards WHERE appid = ?",
		appid,
	).then((rows) => rows.sort((a, b) => a.rewarddtlid.localeCompare(b.rewarddtlid)));

/** The ledger's outbox entries, by kind. */
const outboxOf = (app: App, userkey: string) =>
	runInDurableObject(ledgerFor(env, app.appid, userkey), (_l, state) =>
		state.storage.sql.exec<{ kind: string }>("SELECT kind FROM outbox").toArray(),
	);

/** Every reward of both ledgers is in D1 once, at the ledger's version; each ledger's balance is the sum of its rewards. */
async function exactlyProjected(app: App, expected: number) {
	const ledgers = await Promise.all(
		[app.referrer, app.friend].map(async (userkey) => ({ userkey, rewards: await ledgerFor(env, app.appid, userkey).listRewards() })),
	);
	const inLedgers = ledgers.flatMap(({ userkey, rewards }) =>
		rewards.map((r) => ({ userkey, rewarddtlid: r.rewarddtlid, version: r.version })),
	);
	expect(inLedgers).toHaveLength(expected);
	const rows = await until(
		"every reward projected at its version",
		() => projected(app.appid),
		(rows) =>
			rows.length === expected && inLedgers.every((r) => rows.some((p) => p.rewarddtlid === r.rewarddtlid && p.version === r.version)),
	);
	expect(rows.map(({ userkey, rewarddtlid, version }) => ({ userkey, rewarddtlid, version })).sort(byId)).toEqual(inLedgers.sort(byId));
	for (const { userkey, rewards } of ledgers) {
		// One reward per grant key.
		expect(new Set(rewards.map((r) => r.key)).size).toBe(rewards.length);
		// The balance is the sum of the rewards that count (a rejected one counts nothing).
		const total = (await ledgerFor(env, app.appid, userkey).balance()).reduce((n, b) => n + b.total, 0);
		expect(total).toBe(rewards.reduce((n, r) => n + (r.rewardstatus === "Rejected" ? 0 : r.amount - r.reversedAmount), 0));
	}
	return rows;
}
const byId = (a: { rewarddtlid: string }, b: { rewarddtlid: string }) => a.rewarddtlid.localeCompare(b.rewarddtlid);

/** The conversion whose friend's grant fails after the referrer's committed: the referrer's reward is there, nowhere else. */
async function halfDone(app: App, customid: string) {
	const injected = failNextWrite(app.friend);
	const res = await app.purchase(customid);
	expect(injected.failed()).toBe(true);
	expect(res.status).toBeGreaterThanOrEqual(500);
	LedgerWriter.prototype.write = writeOriginal;
	expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);
	expect(await ledgerFor(env, app.appid, app.friend).listRewards()).toHaveLength(0);
	// The hole: the referrer queued no entry of its own for its reward (its friend's ledger was to keep its records).
	expect(await outboxOf(app, app.referrer)).toEqual([]);
	await new Promise((resolve) => setTimeout(resolve, 200));
	expect(await projected(app.appid)).toEqual([]);
}

describe("a referrer's records when its friend's grant fails after the referrer's committed", { timeout: 60_000 }, () => {
	it("the client's repeat hands them back: the referrer's reward projected once, at its version", async () => {
		const app = await referral();
		await halfDone(app, "rr-1");
		const again = await app.purchase("rr-1");
		expect(again.status).toBe(200);
		const rows = await exactlyProjected(app, 2);
		expect(rows.map((r) => r.userkey).sort()).toEqual([app.friend, app.referrer].sort());
		// Both outboxes empty once acknowledged: nothing left to send again.
		for (const userkey of [app.referrer, app.friend]) {
			await until(
				"the outbox emptied",
				() => outboxOf(app, userkey),
				(e) => e.length === 0,
			);
		}
		// A repeat of the completed event hands the same records back once more: harmless (the version guard).
		expect((await app.purchase("rr-1")).status).toBe(200);
		await exactlyProjected(app, 2);
	});

	it("the completion pass does the same when nobody repeats the event", async () => {
		const app = await referral();
		await halfDone(app, "rr-2");
		const report = await completeRecordedConversions(env, Date.now() + COMPLETION_DELAY_MS + 1_000);
		expect(report.completed).toBeGreaterThanOrEqual(1);
		await exactlyProjected(app, 2);
		// Then a status change of the referrer's reward: its own entry, at a newer version, wins over any late copy.
		const [reward] = await ledgerFor(env, app.appid, app.referrer).listRewards();
		const res = await app.api("changerewardstatus", { rewardslist: [{ rewarddtlid: reward?.rewarddtlid, rewardstatus: "Rejected" }] });
		expect(res.status).toBe(200);
		const rows = await exactlyProjected(app, 2);
		expect(rows.find((r) => r.rewarddtlid === reward?.rewarddtlid)?.version).toBeGreaterThan(reward?.version ?? 0);
	});

	it("an erasure of the friend before any repeat: its event is refused for good, and the referrer's reward still reaches D1", async () => {
		const app = await referral();
		await halfDone(app, "rr-3");
		// The erasure queues the referrer's rewards naming the friend again (grant.ts, reprojectNaming), and flushes them.
		expect((await admin("DELETE", `/apps/${app.appid}/users/${app.friend}`)).status).toBeLessThan(300);
		const report = await completeRecordedConversions(env, Date.now() + COMPLETION_DELAY_MS + 1_000);
		expect(report.refused).toBeGreaterThanOrEqual(1);
		const [reward] = await ledgerFor(env, app.appid, app.referrer).listRewards();
		const rows = await until(
			"the referrer's reward projected",
			() => projected(app.appid),
			(rows) => rows.length === 1,
		);
		expect(rows).toEqual([{ userkey: app.referrer, rewarddtlid: reward?.rewarddtlid, version: reward?.version }]);
	});

	it("an erasure of the referrer before the repeat: it earns nothing new, and its reward still reaches D1", async () => {
		const app = await referral();
		await halfDone(app, "rr-4");
		expect((await admin("DELETE", `/apps/${app.appid}/users/${app.referrer}`)).status).toBeLessThan(300);
		// The repeat grants the friend; the erased referrer's ledger only hands back what the first attempt granted it.
		expect((await app.purchase("rr-4")).status).toBe(200);
		const [reward] = await ledgerFor(env, app.appid, app.referrer).listRewards();
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);
		const rows = await until(
			"both rewards projected",
			() => projected(app.appid),
			(rows) => rows.length === 2,
		);
		expect(rows.find((r) => r.userkey === app.referrer)).toEqual({
			userkey: app.referrer,
			rewarddtlid: reward?.rewarddtlid,
			version: reward?.version,
		});
	});
});
