import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deleteExpiredKeys } from "../../src/db/idempotency-replies";
import { requestFingerprint } from "../../src/http/idempotency-key";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp, request } from "../support/api";

type App = Awaited<ReturnType<typeof createApp>>;

/** A raw call with an Idempotency-Key: status, parsed body, replay header. */
async function keyed(app: App, operation: string, body: Record<string, unknown>, key: string | null) {
	const response = await request(`/saas/v1_0/${operation}`, {
		method: "POST",
		headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }) },
		body: JSON.stringify({ apikey: app.apikey, privatekey: app.privatekey, ...body }),
	});
	return { status: response.status, text: await response.text(), replayed: response.headers.get("idempotent-replayed") };
}

/** An app whose referrer holds `friends` approved 10 USD rewards. */
async function referrerWith(friends: number) {
	const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }] });
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	for (let i = 0; i < friends; i++) {
		const friend = (await app.api("register", { email: `f${i}@x.com`, referrercode: referrer.referralcode })).body;
		await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: String(i + 1),
			growthhack: "SaaS_Referrals",
		});
	}
	return { app, userkey: referrer.userkey as string, code: referrer.referralcode as string };
}

const approved = async (app: App, userkey: string) =>
	(await ledgerFor(env, app.appid, userkey).balance({})).reduce((sum, b) => sum + b.approved, 0);

describe("Idempotency-Key", () => {
	it("refuses a malformed key with 400 validation_failed, changing nothing", async () => {
		const { app, userkey } = await referrerWith(1);
		for (const key of ["", "x".repeat(256), "del\u007f", "tab\there"]) {
			const response = await keyed(app, "redeemrewards", { userkey, amount: "1" }, key);
			expect(response.status).toBe(400);
			expect(JSON.parse(response.text)).toMatchObject({ errorcode: "validation_failed", fields: ["Idempotency-Key"] });
		}
		expect(await approved(app, userkey)).toBe(10);
		expect((await keyed(app, "redeemrewards", { userkey, amount: "1" }, "x".repeat(255))).status).toBe(200);
	});

	it("20 concurrent redeems with one key debit once and all answer the same body", async () => {
		const { app, userkey } = await referrerWith(3);
		const responses = await Promise.all(
			Array.from({ length: 20 }, () => keyed(app, "redeemrewards", { userkey, amount: "7.5" }, "redeem-order-1")),
		);
		expect(new Set(responses.map((r) => `${r.status} ${r.text}`)).size).toBe(1);
		expect(responses[0]).toMatchObject({ status: 200 });
		expect(responses.filter((r) => r.replayed === "true")).toHaveLength(19);
		expect(await approved(app, userkey)).toBe(22.5);
		// Later retries replay too.
		const again = await keyed(app, "redeemrewards", { userkey, amount: "7.5" }, "redeem-order-1");
		expect(again).toMatchObject({ status: 200, text: responses[0]!.text, replayed: "true" });
		expect(await approved(app, userkey)).toBe(22.5);
	});

	it("the same key with another body or operation is 422 idempotency_key_reused; field order does not matter", async () => {
		const { app, userkey } = await referrerWith(2);
		expect((await keyed(app, "redeemrewards", { userkey, amount: "1" }, "k1")).status).toBe(200);
		const other = await keyed(app, "redeemrewards", { userkey, amount: "2" }, "k1");
		expect(other.status).toBe(422);
		expect(JSON.parse(other.text)).toMatchObject({ success: false, errorcode: "idempotency_key_reused" });
		expect((await keyed(app, "updateuser", { userkey, city: "Paris" }, "k1")).status).toBe(422);
		expect(await keyed(app, "redeemrewards", { amount: "1", userkey }, "k1")).toMatchObject({ status: 200, replayed: "true" });
		expect(await approved(app, userkey)).toBe(19);
	});

	it("replays a 4xx answer even after the state changed", async () => {
		const { app, userkey, code } = await referrerWith(1);
		const first = await keyed(app, "redeemrewards", { userkey, amount: "15" }, "too-much");
		expect(first.status).toBe(409);
		expect(JSON.parse(first.text)).toMatchObject({ errorcode: "insufficient_balance" });
		const friend = (await app.api("register", { email: "late@x.com", referrercode: code })).body;
		await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "99",
			growthhack: "SaaS_Referrals",
		});
		expect(await approved(app, userkey)).toBe(20);
		const replay = await keyed(app, "redeemrewards", { userkey, amount: "15" }, "too-much");
		expect(replay).toMatchObject({ status: 409, text: first.text, replayed: "true" });
	});

	it("keys are scoped to the app", async () => {
		const one = await referrerWith(1);
		const two = await referrerWith(1);
		expect((await keyed(one.app, "redeemrewards", { userkey: one.userkey, amount: "1" }, "shared")).replayed).toBeNull();
		expect((await keyed(two.app, "redeemrewards", { userkey: two.userkey, amount: "2" }, "shared")).replayed).toBeNull();
		expect(await approved(one.app, one.userkey)).toBe(9);
		expect(await approved(two.app, two.userkey)).toBe(8);
	});

	it("register with a key creates one user and replays its answer", async () => {
		const app = await createApp();
		const first = await keyed(app, "register", { email: "once@x.com" }, "reg-1");
		const second = await keyed(app, "register", { email: "once@x.com" }, "reg-1");
		expect(first.status).toBe(200);
		expect(second).toMatchObject({ status: 200, text: first.text, replayed: "true" });
	});

	it("a crash after the ledger's debit, before the answer was stored, does not debit again on retry", async () => {
		const { app, userkey } = await referrerWith(2);
		const body = { userkey, amount: "5" };
		// The debit committed in the ledger with its key, then the process died: D1 never recorded the answer.
		const fingerprint = await requestFingerprint("redeemrewards", { apikey: app.apikey, privatekey: app.privatekey, ...body });
		const debit = await ledgerFor(env, app.appid, userkey).redeemByAmount({ amount: 5, idempotency: { key: "crash-1", fingerprint } });
		expect(debit).toMatchObject({ ok: true, redeemed: 5 });
		const retry = await keyed(app, "redeemrewards", body, "crash-1");
		expect(retry.status).toBe(200);
		expect(JSON.parse(retry.text)).toMatchObject({ success: true, redeemed: 5 });
		expect(await approved(app, userkey)).toBe(15);
	});

	it("a retryable 409 reward_locked is not stored: the retry with the same key runs once the lock is gone", async () => {
		const { app, userkey } = await referrerWith(2);
		const ledger = ledgerFor(env, app.appid, userkey);
		const [oldest] = await ledger.listRewards();
		// A refund or status change holds the oldest reward, which a redemption of 15 needs.
		const reject = { kind: "status" as const, changes: [{ rewarddtlid: oldest!.rewarddtlid, status: "Rejected" as const, message: "x" }] };
		expect(await ledger.prepareTransaction("tx_hold", reject, 15_000)).toMatchObject({ ok: true });
		const locked = await keyed(app, "redeemrewards", { userkey, amount: "15" }, "locked-1");
		expect(locked.status).toBe(409);
		expect(JSON.parse(locked.text)).toMatchObject({ errorcode: "reward_locked", retryable: true });
		expect(await ledger.abortTransaction("tx_hold")).toMatchObject({ ok: true });
		const retry = await keyed(app, "redeemrewards", { userkey, amount: "15" }, "locked-1");
		expect(retry).toMatchObject({ status: 200, replayed: null });
		expect(await approved(app, userkey)).toBe(5);
		// From now on the final answer is the one replayed.
		expect(await keyed(app, "redeemrewards", { userkey, amount: "15" }, "locked-1")).toMatchObject({
			status: 200,
			text: retry.text,
			replayed: "true",
		});
		expect(await approved(app, userkey)).toBe(5);
	});

	it("a 500 is not stored: the key is let go and a retry runs afresh", async () => {
		const { app, userkey } = await referrerWith(1);
		await env.DB.exec("ALTER TABLE friend_reminders RENAME TO friend_reminders_offline");
		let failed: Awaited<ReturnType<typeof keyed>>;
		try {
			failed = await keyed(app, "remindfriend", { userkey, friendemail: "f0@x.com" }, "remind-1");
		} finally {
			await env.DB.exec("ALTER TABLE friend_reminders_offline RENAME TO friend_reminders");
		}
		expect(failed.status).toBe(500);
		const key = () =>
			env.DB.prepare("SELECT state FROM idempotency_keys WHERE appid = ? AND idempotency_key = 'remind-1'").bind(app.appid).first();
		// Let go after the answer (waitUntil): wait on the row itself.
		for (let i = 0; i < 100 && (await key()) !== null; i++) await new Promise((r) => setTimeout(r, 20));
		expect(await key()).toBeNull();
		const retry = await keyed(app, "remindfriend", { userkey, friendemail: "f0@x.com" }, "remind-1");
		expect(retry).toMatchObject({ status: 200, replayed: null });
	});

	it("a repeat while the first call runs waits for its answer and replays it", async () => {
		const { app, userkey } = await referrerWith(1);
		const body = { userkey, amount: "1" };
		const fingerprint = await requestFingerprint("redeemrewards", body);
		// The first call holds the key (still running, its lock valid for a minute).
		await env.DB.prepare(
			`INSERT INTO idempotency_keys (appid, idempotency_key, operation, fingerprint, state, token, locked_until, created_at, expires_at)
			 VALUES (?, 'slow-1', 'redeemrewards', ?, 'running', 'first', ?, ?, ?)`,
		)
			.bind(app.appid, fingerprint, Date.now() + 60_000, new Date().toISOString(), new Date(Date.now() + 86_400_000).toISOString())
			.run();
		const waiting = keyed(app, "redeemrewards", body, "slow-1");
		await new Promise((r) => setTimeout(r, 200));
		await env.DB.prepare(
			`UPDATE idempotency_keys SET state = 'done', status = 200, body = '{"success":true,"message":"first"}' WHERE idempotency_key = 'slow-1'`,
		).run();
		expect(await waiting).toMatchObject({ status: 200, text: '{"success":true,"message":"first"}', replayed: "true" });
		expect(await approved(app, userkey)).toBe(10);
	});

	it("operations that change nothing ignore the header", async () => {
		const { app, userkey } = await referrerWith(1);
		const read = await keyed(app, "checkrewardstatus", { rewarddtlid: `${userkey}-1` }, "tab\tis not valid");
		expect(read.status).toBe(200);
	});

	it("expired keys are deleted by the cleanup job", async () => {
		const app = await createApp();
		await keyed(app, "register", { email: "old@x.com" }, "old-key");
		await env.DB.prepare("UPDATE idempotency_keys SET expires_at = '2000-01-01T00:00:00.000Z' WHERE appid = ?").bind(app.appid).run();
		expect(await deleteExpiredKeys(env.DB)).toBeGreaterThanOrEqual(1);
		expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM idempotency_keys WHERE appid = ?").bind(app.appid).first()).toEqual({ n: 0 });
	});
});
