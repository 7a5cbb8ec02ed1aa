import { Hono } from "hono";
import { z } from "zod";
import { recordAudit } from "../db/audit";
import { erasedFriendsOf, markForgottenRewards } from "../db/ledger-restore";
import { findPerson } from "../db/privacy";
import { shardFor } from "../db/shards";
import { nowIso } from "../domain/dates";
import { ApiError, userErased, userNotFound } from "../http/errors";
import { COLON } from "../http/router";
import type { RestoreResynced, RestoreStarted } from "../ledger/restore";
import { type RestoreTarget, restoreTimeError } from "../ledger/restore-plan";
import { ledgerFor } from "../ledger/stub";
import { body } from "./body";
import { requireApp } from "./guard";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * POST /admin/v1/apps/{appid}/users/{userkey}/ledger:restore (superuser only,
 * admin/rights.ts): restores one user's ledger by Durable Objects
 * point-in-time recovery to `at` (a time within the last 30 days) or to
 * `bookmark` (the `undobookmark` an earlier restore answered: its undo), then
 * brings D1's projection of the user's rewards back in line with it
 * (ledger/restore.ts). docs/deploy.md "The ledgers' storage" says when to use
 * it and what it does not restore.
 */
export const ledgerRestoreRoutes = new Hono<AdminEnv>();

export const restoreSchema = z
	.strictObject({
		at: z
			.string()
			.refine((at) => restoreTimeError(Date.parse(at), Date.now()) === null, {
				error: (issue) => restoreTimeError(Date.parse(String(issue.input)), Date.now()) ?? "a time",
			})
			.optional()
			.describe("The time to restore to, ISO 8601, within the last 30 days (e.g. 2026-11-29T08:00:00Z)"),
		bookmark: z
			.string()
			.min(1)
			.max(200)
			.optional()
			.describe("A bookmark to restore to instead: the undobookmark an earlier restore answered (its undo)"),
	})
	.refine((b) => (b.at === undefined) !== (b.bookmark === undefined), {
		error: "exactly one of at (an ISO time within the last 30 days) or bookmark (an undobookmark)",
		path: ["at"],
	});

/** How long the route waits for the restored ledger to start: its abort runs right after the first call answers. */
const RESYNC_TRIES = 20;
const RESYNC_WAIT_MS = 100;

/** The second call, on the restored object: retried while the old one is still going (the restore-pending answer) or resetting. */
async function resync(
	env: Env,
	appid: string,
	userkey: string,
	started: RestoreStarted,
	erasedfriends: string[],
): Promise<RestoreResynced> {
	let last: unknown = null;
	for (let i = 0; i < RESYNC_TRIES; i++) {
		if (i > 0) await new Promise((resolve) => setTimeout(resolve, RESYNC_WAIT_MS));
		try {
			// A new stub each time: one whose object was reset fails every later call.
			const answer = await ledgerFor(env, appid, userkey).restoreLedger(appid, userkey, { step: "resync", ...started, erasedfriends });
			if (answer.ok && "epoch" in answer) return answer;
			last = answer;
		} catch (error) {
			last = error;
		}
	}
	throw new Error(`the ledger was restored but not yet sent to D1: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
}

ledgerRestoreRoutes.post(`/apps/:appid/users/:userkey/ledger${COLON}restore`, async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	const input = await body(c.req.raw, restoreSchema);
	const person = await findPerson(c.env.DB, app.appid, c.req.param("userkey"));
	if (!person) throw userNotFound();
	// Refused, not restored and erased again: erasure is final (docs/fraud.md), and a restore must never bring a person back.
	if (person.erasedAt !== null) throw userErased();
	const { userkey } = person.user;
	const target: RestoreTarget =
		input.at !== undefined ? { at: new Date(Date.parse(input.at)).toISOString() } : { bookmark: input.bookmark ?? "" };
	// Read before the restore is decided: after it, the fewer steps that can fail, the better.
	const erasedfriends = await erasedFriendsOf(c.env.DB, app.appid, userkey);
	const started = await ledgerFor(c.env, app.appid, userkey).restoreLedger(app.appid, userkey, { step: "restore", target });
	if (!started.ok) {
		if (started.code === "user_erased") throw userErased();
		if (started.code === "restore_unavailable") {
			throw new ApiError(501, "restore_unavailable", `Durable Objects point-in-time recovery is not available here: ${started.message}`);
		}
		if (started.code === "restore_past_payout") throw new ApiError(409, "restore_past_payout", `${started.message}; nothing changed.`);
		const field = "at" in target ? "at" : "bookmark";
		throw new ApiError(400, "validation_failed", `${field}: ${started.message}`, { fields: [field] });
	}
	if (!("undobookmark" in started)) throw new Error("ledger restore: the first step answered no bookmark");
	const { ok: _ok, ...bookmarks } = started;
	// The restore is decided once the storage is told: recorded now, so a failure below still leaves its trace and its undo.
	await recordAudit(
		c.env.DB,
		auditEntry(c, app.appid, {
			action: "ledger.restore",
			targetType: "user",
			targetId: userkey,
			changes: { bookmark: { before: bookmarks.undobookmark, after: bookmarks.restoredto } },
		}),
	);
	const resynced = await resync(c.env, app.appid, userkey, bookmarks, erasedfriends);
	const forgotten = resynced.forgotten
		? await markForgottenRewards(
				// A sharded app's projection of the user's rewards is in its home shard (issue 50 phase 2b-1).
				app.layout === "sharded" ? await shardFor(c.env, app.appid, userkey) : c.env.DB,
				app.appid,
				userkey,
				resynced.forgotten,
				resynced.epoch,
				nowIso(),
				`Forgotten by a restore of the ledger to ${"at" in target ? target.at : target.bookmark}`,
			)
		: 0;
	return c.json({
		userkey,
		at: "at" in target ? target.at : null,
		restoredto: bookmarks.restoredto,
		undobookmark: bookmarks.undobookmark,
		rewards: resynced.rewards,
		forgottenrewards: forgotten,
		reerased: resynced.reerased,
	});
});
