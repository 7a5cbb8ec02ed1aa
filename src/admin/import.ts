import { Hono } from "hono";
import { z } from "zod";
import { findApp } from "../db/apps";
import { type ImportedPointer, type ImportedUser, type ImportRow, importLookups, insertImportedUsers, type KnownUser } from "../db/import";
import { newReferralCode, newUserKey } from "../domain/ids";
import { ApiError } from "../http/errors";
import { optionalEmail, optionalId } from "../http/fields";
import { readJsonObject } from "../http/json-body";
import { COLON } from "../http/router";
import type { FriendRecord } from "../ledger/friends";
import { ledgerFor } from "../ledger/stub";
import { rememberImported } from "../operations/conversion-parties";
import { profileFields, profileOf } from "../operations/schemas";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * Bulk import of users (admin API, under /admin/v1): up to 1,000 users per
 * call with their referrers, all or nothing, with the checks `register`
 * makes. For operators moving from another referral tool (users keep their
 * referral codes) and for seeding. See README.md "Importing users".
 */
export const importRoutes = new Hono<AdminEnv>();

export const MAX_IMPORT_USERS = 1000;
/** 1,000 users with full profiles do not fit the operations' 64 KB limit. */
const MAX_IMPORT_BYTES = 2 * 1024 * 1024;

const code = z
	.string()
	.trim()
	.regex(/^[0-9A-Za-z_-]{4,32}$/, "must be 4 to 32 letters, digits, _ or -")
	.transform((v) => v.toUpperCase());

export const importSchema = z.object({
	users: z
		.array(
			z.object({
				...profileFields,
				/** The user's own referral code (kept from another tool); a new one is issued when absent. */
				referralcode: code.optional(),
				/** The referrer's referral code: an existing user's, or the `referralcode` of a user earlier in this import. */
				referrercode: code.optional(),
				/** Or the referrer by email / account id: an existing user, or one earlier in this import. */
				referrer: z.object({ email: optionalEmail, useraccountid: optionalId }).optional(),
			}),
		)
		.min(1, "must hold at least one user")
		.max(MAX_IMPORT_USERS, `at most ${MAX_IMPORT_USERS} users per call`),
});

type Input = z.output<typeof importSchema>["users"][number];

/** One refused row. */
interface RowError {
	index: number;
	errorcode: string;
	message: string;
}

interface Planned {
	rows: ImportRow[];
	referrercodes: (string | null)[];
}

/** Checks every row against the import itself and what D1 holds, and plans the inserts; errors name their rows. */
function plan(users: Input[], appid: string, known: Awaited<ReturnType<typeof importLookups>>): Planned | RowError[] {
	const errors: RowError[] = [];
	const fail = (index: number, errorcode: string, message: string) => errors.push({ index, errorcode, message });
	const existingBy = (list: KnownUser[], key: "email" | "useraccountid" | "referralcode") =>
		new Map(list.map((u) => [(u[key] ?? "").toLowerCase(), u]));
	const byEmail = existingBy(known.byEmail, "email");
	const byAccount = existingBy(known.byAccount, "useraccountid");
	const byCode = existingBy(known.byCode, "referralcode");
	// Users of this import seen so far, by what a later row may name them with.
	const earlier = { email: new Map<string, number>(), account: new Map<string, number>(), code: new Map<string, number>() };
	const rows: ImportRow[] = [];
	const referrercodes: (string | null)[] = [];
	const taken = new Set(known.byCode.map((u) => u.referralcode));

	users.forEach((user, index) => {
		const email = user.email?.toLowerCase();
		const account = user.useraccountid?.toLowerCase();
		if (email && (byEmail.has(email) || earlier.email.has(email))) fail(index, "email_taken", "Another user of this app has that email.");
		if (account && (byAccount.has(account) || earlier.account.has(account)))
			fail(index, "useraccountid_taken", "Another user of this app has that useraccountid.");
		if (user.referralcode && (byCode.has(user.referralcode.toLowerCase()) || earlier.code.has(user.referralcode)))
			fail(index, "referralcode_taken", "That referral code is taken.");

		// The referrer: earlier in this import first, else an existing user of the app.
		let referrer: { row: number } | { user: KnownUser } | null = null;
		if (user.referrercode) {
			const row = earlier.code.get(user.referrercode);
			const existing = byCode.get(user.referrercode.toLowerCase());
			if (row !== undefined) referrer = { row };
			else if (existing && existing.appid === appid) referrer = { user: existing };
			else if (user.referrercode === user.referralcode) fail(index, "own_referrer_code", "A user cannot use their own referral code.");
			else fail(index, "referrer_code_not_found", "No user of this app (or earlier in this import) has that referral code.");
		} else if (user.referrer?.email || user.referrer?.useraccountid) {
			const e = user.referrer.email?.toLowerCase();
			const a = user.referrer.useraccountid?.toLowerCase();
			const row = (e && earlier.email.get(e)) ?? (a && earlier.account.get(a));
			const existing = (e && byEmail.get(e)) || (a && byAccount.get(a));
			if (typeof row === "number") referrer = { row };
			else if (existing) referrer = { user: existing };
			else if ((e && e === email) || (a && a === account)) fail(index, "own_referrer_code", "A user cannot be their own referrer.");
			else fail(index, "referrer_not_found", "No user of this app (or earlier in this import) is that referrer.");
		}
		const referrerRow = referrer && "row" in referrer ? rows[referrer.row] : undefined;
		const campaignid = referrer && "user" in referrer ? referrer.user.campaignid : (referrerRow?.campaignid ?? known.defaultCampaign);
		if (campaignid === null || campaignid === undefined) fail(index, "campaign_not_found", "The app has no default campaign.");

		let referralcode = user.referralcode;
		while (!referralcode || (!user.referralcode && (taken.has(referralcode) || earlier.code.has(referralcode)))) {
			referralcode = newReferralCode();
		}
		if (email) earlier.email.set(email, index);
		if (account) earlier.account.set(account, index);
		earlier.code.set(referralcode, index);
		rows.push({
			userkey: newUserKey(),
			referralcode,
			campaignid: campaignid ?? 0,
			profile: profileOf(user),
			referrerUserid: referrer && "user" in referrer ? referrer.user.userid : null,
			referrerKey: referrerRow?.userkey ?? null,
			referrerUserkey: referrer && "user" in referrer ? referrer.user.userkey : (referrerRow?.userkey ?? null),
		});
		referrercodes.push(referrer && "user" in referrer ? referrer.user.referralcode : (referrerRow?.referralcode ?? null));
	});
	return errors.length > 0 ? errors : { rows, referrercodes };
}

/** Referrers' ledgers written at once by an import (at most 1,000 referrers a call). */
const LEDGER_CALLS_AT_ONCE = 50;

/**
 * Each referrer's ledger keeps its imported friends (issue 49 piece 4,
 * ledger/friends.ts): one call per referrer, after D1's batch, as attribution
 * does (operations/friend-ledger.ts). A referrer created by this import had no
 * friends before (0: nothing to fill from D1); an existing one fills the rest
 * from D1 when its friends are first read. A failed call is logged, not
 * thrown: D1 holds the import, and the friend is written again by its
 * conversion or profile change (docs/scaling.md).
 */
async function rememberImportedFriends(env: Env, appid: string, rows: ImportRow[], inserted: ImportedUser[]): Promise<void> {
	const stored = new Map(inserted.map((u) => [u.userkey, u]));
	const byReferrer = new Map<string, { fresh: boolean; friends: FriendRecord[] }>();
	for (const row of rows) {
		const user = stored.get(row.userkey);
		if (!row.referrerUserkey || !user) continue;
		const entry = byReferrer.get(row.referrerUserkey) ?? { fresh: row.referrerKey !== null, friends: [] };
		const { email = null, useraccountid = null, name = null, profileimage = null } = row.profile;
		entry.friends.push({
			userkey: row.userkey,
			userid: user.userid,
			email,
			useraccountid,
			name,
			profileimage,
			status: "SignUp",
			registeredAt: user.created_at,
			attributedAt: user.created_at,
		});
		byReferrer.set(row.referrerUserkey, entry);
	}
	const calls = [...byReferrer];
	for (let i = 0; i < calls.length; i += LEDGER_CALLS_AT_ONCE) {
		await Promise.all(
			calls.slice(i, i + LEDGER_CALLS_AT_ONCE).map(([referrer, { fresh, friends }]) =>
				ledgerFor(env, appid, referrer)
					.rememberFriends(appid, referrer, friends, "attributed", fresh ? 0 : undefined)
					.catch((error: unknown) => console.error("import: a referrer's ledger did not keep its friends", error)),
			),
		);
	}
}

const TAKEN = new Set(["email_taken", "useraccountid_taken", "referralcode_taken"]);

/**
 * POST /admin/v1/apps/{appid}/users:import `{"users": [...]}`: creates every
 * user or none. Two D1 round trips (the lookups, then one batch), whatever
 * the number of users; then each referred user's ledger keeps its profile
 * (one object call each, 16 at a time: issue 49). No webhook is sent for
 * imported users: they are not new sign-ups.
 */
importRoutes.post(`/apps/:appid/users${COLON}import`, async (c) => {
	const app = await findApp(c.env.DB, c.req.param("appid"));
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	const { users } = importSchema.parse(await readJsonObject(c.req.raw, MAX_IMPORT_BYTES));
	const ask = {
		emails: users.flatMap((u) => [u.email, u.referrer?.email].filter((v): v is string => !!v)),
		accounts: users.flatMap((u) => [u.useraccountid, u.referrer?.useraccountid].filter((v): v is string => !!v)),
		codes: users.flatMap((u) => [u.referralcode, u.referrercode].filter((v): v is string => !!v)),
		defaultCampaignId: app.defaultCampaignId,
	};
	// A conflict that appears between the checks and the insert (a registration meanwhile, a generated code taken) fails the
	// batch whole; the checks then run again and name the row, or the call is refused as a conflict to retry.
	for (let attempt = 0; attempt < 3; attempt++) {
		const planned = plan(users, app.appid, await importLookups(c.env.DB, app.appid, ask));
		if (Array.isArray(planned)) {
			const status = planned.every((e) => TAKEN.has(e.errorcode)) ? 409 : 400;
			throw new ApiError(status, "import_rejected", `${planned.length} user(s) refused; nothing was imported.`, { errors: planned });
		}
		let inserted: ImportedUser[];
		let pointers: ImportedPointer[];
		try {
			({ inserted, pointers } = await insertImportedUsers(
				c.env.DB,
				app.appid,
				planned.rows,
				auditEntry(c, app.appid, {
					action: "users.import",
					targetType: "app",
					targetId: app.appid,
					changes: { users: { before: null, after: planned.rows.length } },
				}),
			));
		} catch (error) {
			if (!String(error).includes("UNIQUE")) throw error;
			continue;
		}
		// Each referrer's ledger keeps its new friends (its friends page), and each referred user's ledger its profile and
		// pointer, so its conversions read no D1 (issue 49).
		await rememberImportedFriends(c.env, app.appid, planned.rows, inserted);
		await rememberImported(c.env, app.appid, planned.rows, { inserted, pointers });
		return c.json(
			{
				imported: planned.rows.length,
				users: planned.rows.map((row, i) => ({
					userkey: row.userkey,
					referralcode: row.referralcode,
					email: row.profile.email ?? null,
					useraccountid: row.profile.useraccountid ?? null,
					hasreferrer: planned.referrercodes[i] !== null,
					referrercode: planned.referrercodes[i] ?? "",
				})),
			},
			201,
		);
	}
	throw new ApiError(409, "import_conflict", "Concurrent changes conflicted with the import; nothing was imported. Try again.");
});
