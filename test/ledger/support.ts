import { env } from "cloudflare:workers";
import { newAppId, newUserKey } from "../../src/domain/ids";
import { ledgerFor } from "../../src/ledger/stub";
import type { RewardGrant } from "../../src/ledger/types";

/** A fresh ledger of a fresh (app, user), with the identity the RPC methods need. */
export function freshLedger(appid = newAppId()) {
	const userkey = newUserKey();
	return { appid, userkey, stub: ledgerFor(env, appid, userkey) };
}

/**
 * A fresh app id whose app exists in D1 with a webhook URL (the test
 * receiver), so its ledgers record webhook events: an app without a webhook
 * URL gets none.
 */
export async function hookedAppId(): Promise<string> {
	const appid = newAppId();
	const now = new Date().toISOString();
	await env.DB.prepare(
		`INSERT INTO apps (appid, name, apikey, privatekey_hash, webhook_secret, webhookurl, created_at, updated_at)
		 VALUES (?, 'ledger test', ?, '', 'whsec_dGVzdA==', ?, ?, ?)`,
	)
		.bind(appid, `ak_${appid}`, `${env.WEBHOOK_RECEIVER_URL}/hooks/${appid}`, now, now)
		.run();
	return appid;
}

let counter = 0;

/** A grant with sensible defaults: a 10 USD wallet reward, approved, for a fresh friend. */
export function grantOf(overrides: Partial<RewardGrant> = {}): RewardGrant {
	counter++;
	return {
		key: `c${counter}:1`,
		ruleid: 1,
		rewardfrequency: 0,
		usertype: "Referrer",
		amount: 10,
		rewardunit: "USD",
		rewardtype: "InstoreCredits",
		campaignid: 1,
		campaignname: "Give 10 get 10",
		growthhack: "SaaS_Referrals",
		eventname: "Signup",
		customid: `c${counter}`,
		friend: { userkey: newUserKey(), email: "friend@example.com", name: "Friend", profileimage: null },
		status: "Approved",
		holdUntil: null,
		comment: null,
		...overrides,
	};
}

/** mulberry32: a tiny seeded PRNG, so a failing property run can be replayed from its seed. */
export function mulberry32(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
