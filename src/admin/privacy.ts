import { type Context, Hono } from "hono";
import { clickCounterFor } from "../clicks/click-counter";
import { appLayout } from "../db/app-layout";
import { findApp } from "../db/apps";
import { recordAudit } from "../db/audit";
import {
	erasePersonInD1,
	eventCustomids,
	findPerson,
	logPrivacyAction,
	type PersonRecord,
	personActivity,
	privacyLog,
} from "../db/privacy";
import { shardFor } from "../db/shards";
import { nowIso } from "../domain/dates";
import { gateShard } from "../domain/gate-shard";
import { ApiError, userNotFound } from "../http/errors";
import { gateStub } from "../ledger/event-gate";
import { ledgerFor } from "../ledger/stub";
import { erasableValues } from "../privacy/redact";
import { type AdminEnv, auditEntry, authOf } from "./principal";

/**
 * Privacy operations on one person (admin API, under /admin/v1; mounted on
 * adminRoutes, so its bearer-token check applies): erase and export. Both
 * are idempotent and logged in privacy_log with who asked and when, never
 * what was held. "Who" is the request's authenticated actor (the member's
 * email, the token's name, or superuser): no header a client sends sets it.
 */
export const privacyRoutes = new Hono<AdminEnv>();

async function requirePerson(db: D1Database, appid: string, userkey: string): Promise<PersonRecord> {
	if (!(await findApp(db, appid))) throw new ApiError(404, "app_not_found", "No app with that appid.");
	const person = await findPerson(db, appid, userkey);
	if (!person) throw userNotFound();
	return person;
}

/** Asks each gate holding some of `customids` to drop their free text. */
async function redactGates(env: Env, appid: string, customids: string[]): Promise<void> {
	const byShard = new Map<number, string[]>();
	for (const customid of customids) {
		const shard = gateShard(appid, customid);
		byShard.set(shard, [...(byShard.get(shard) ?? []), customid]);
	}
	await Promise.all([...byShard].map(([shard, ids]) => gateStub(env, shard).redact(appid, ids)));
}

/** Who asked: the request's authenticated actor, as the auth middleware settled it (admin/principal.ts). */
const actorOf = (c: Context) => authOf(c).actor.name;

/**
 * Erases the person: personal fields in D1, in its own ledger and in its
 * referrer's (friend snapshots on rewards), and in stored payloads. Rewards
 * and balances stay exact; the referral code stops working. Ledgers first, so
 * a call that dies half way leaves D1 intact for the retry to read the values
 * again; every step can run twice.
 */
privacyRoutes.delete("/apps/:appid/users/:userkey", async (c) => {
	const appid = c.req.param("appid");
	const person = await requirePerson(c.env.DB, appid, c.req.param("userkey"));
	const { user } = person;
	const values = erasableValues([
		user.email,
		user.name,
		user.phone,
		user.profileimage,
		user.paymentcustomerid,
		person.useragent,
		...person.devices.map((d) => d.deviceid),
	]);
	const ledgers = [user.userkey, ...(person.referrerUserkey ? [person.referrerUserkey] : [])];
	// In its referrer's ledger the person's row on the friends page loses its shown fields for good (ledger/friends.ts).
	const { userkey, userid, status, createdAt } = user;
	const cleared = { email: null, useraccountid: null, name: null, profileimage: null };
	const asFriend = { userkey, userid, status, ...cleared, registeredAt: createdAt, attributedAt: null };
	const erased = await Promise.all(
		ledgers.map((owner) => ledgerFor(c.env, appid, owner).erasePerson(user.userkey, values, owner === user.userkey ? undefined : asFriend)),
	);
	// Not before either ledger's redaction on its own clock: the projection queue's consumer compares it with the
	// ledgers' messages' sentAt and holds back the webhook events of any sent before it (db/privacy.ts, erasedSince).
	const at = new Date(Math.max(Date.now(), ...erased.map((e) => e.atMs))).toISOString();
	// The free text of the person's events in their gates (ledger/event-gate.ts); before D1, which lists them. An event
	// not in D1 yet is refused there from now on (erased), and the completion pass redacts it when it settles it.
	await redactGates(c.env, appid, await eventCustomids(c.env.DB, user.userid));
	const audit = auditEntry(c, appid, { action: "user.erase", targetType: "user", targetId: user.userkey });
	// A sharded app's board counters are in the user's home shard (issue 50 phase 2b-1): erased there first.
	const home = (await appLayout(c.env.DB, appid)) === "sharded" ? await shardFor(c.env, appid, user.userkey) : null;
	await erasePersonInD1(c.env.DB, person, values, { actor: actorOf(c), at }, audit, home);
	// The code's click counter forgets where it led and its pending clicks: the link is a 404 from now on.
	if (user.referralcode) await clickCounterFor(c.env, user.referralcode).forget(user.referralcode);
	return c.json({ userkey: user.userkey, erased: true, alreadyerased: person.erasedAt !== null, erasedat: person.erasedAt ?? at });
});

/** Everything held about the person, as one JSON document. */
privacyRoutes.get("/apps/:appid/users/:userkey/export", async (c) => {
	const appid = c.req.param("appid");
	const person = await requirePerson(c.env.DB, appid, c.req.param("userkey"));
	const { user } = person;
	const own = ledgerFor(c.env, appid, user.userkey);
	const [activity, rewards, balance, givenToReferrer] = await Promise.all([
		personActivity(c.env.DB, user),
		own.listRewards(),
		own.balance(),
		person.referrerUserkey
			? ledgerFor(c.env, appid, person.referrerUserkey)
					// An export holds everything: a person with more rewards than this is beyond any real referral.
					.rewardsForFriends([user.userkey], 10_000)
					.then((byFriend) => byFriend[user.userkey]?.rewards ?? [])
			: [],
	]);
	const at = nowIso();
	await logPrivacyAction(c.env.DB, appid, user.userkey, "export", { actor: actorOf(c), at });
	// Who read a person's data, in the audit log too, naming the signed-in actor (issue 31).
	await recordAudit(c.env.DB, auditEntry(c, appid, { action: "user.export", targetType: "user", targetId: user.userkey }));
	return c.json({
		exportedat: at,
		appid,
		user: {
			userkey: user.userkey,
			referralcode: user.referralcode,
			campaignid: user.campaignid,
			email: user.email,
			useraccountid: user.useraccountid,
			name: user.name,
			phone: user.phone,
			profileimage: user.profileimage,
			city: user.city,
			state: user.state,
			country: user.country,
			paymentcustomerid: user.paymentcustomerid,
			usertimezone: user.usertimezone,
			extrainfo: user.extrainfo,
			useragent: person.useragent,
			isexistinguser: user.isexistinguser,
			status: user.status,
			referreruserkey: person.referrerUserkey,
			registeredat: user.createdAt,
			erasedat: person.erasedAt,
		},
		devices: person.devices,
		// Keyed hashes only: the addresses themselves were never stored.
		ipaddresshashes: person.iphashes,
		friends: activity.friends,
		events: activity.events,
		rewards,
		balance,
		rewardsgiventoreferrer: givenToReferrer,
		sharelinkclicks: activity.clicks,
		privacylog: await privacyLog(c.env.DB, appid, user.userkey),
	});
});
