import { Hono } from "hono";
import { z } from "zod";
import { type ProjectedRewardRow, rewardOrigin, rewardPeople } from "../db/admin-rewards";
import { newAuditEntryId } from "../db/audit";
import { listAppRewards } from "../db/rewards-shards";
import { minorToUnits } from "../domain/currency";
import { userkeyOfRewardId } from "../domain/ledger-ids";
import { ApiError, badRequest } from "../http/errors";
import { readJsonObject } from "../http/json-body";
import { ledgerFor } from "../ledger/stub";
import { statusChangesSchema } from "../operations/schemas";
import { changeRewardStatuses } from "../operations/status-change";
import { valueOrThrow } from "../operations/work";
import { requireAppId } from "./guard";
import { page, pageRequest } from "./paging";
import { type AdminEnv, authOf } from "./principal";

/** Admin reads of the rewards projection and the status change (under /admin/v1). */
export const rewardRoutes = new Hono<AdminEnv>();

const STATUSES = ["Approved", "UnderReview", "Suspicious", "Rejected", "Rewarded"] as const;
const rewardCursor = z.tuple([z.string().min(1).max(40), z.string().min(1).max(200)]);
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A `from`/`to` bound: a day (to: the whole day counts) or an ISO date-time; null when absent. */
export function dateBound(raw: string | undefined, name: "from" | "to"): string | null {
	if (!raw) return null;
	const t = Date.parse(DAY.test(raw) ? `${raw}T00:00:00Z` : raw);
	if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(t))
		throw badRequest(`${name} must be a date (YYYY-MM-DD) or an ISO date-time.`, { fields: [name] });
	return new Date(name === "to" && DAY.test(raw) ? t + 86_400_000 : t).toISOString();
}

export function campaignFilter(raw: string | undefined): number | null {
	if (!raw) return null;
	if (!/^\d{1,15}$/.test(raw)) throw badRequest("campaignid must be a numeric campaign id.", { fields: ["campaignid"] });
	return Number(raw);
}

function statusFilter(raw: string | undefined): string[] {
	if (!raw) return [];
	return raw.split(",").map((s) => {
		const status = STATUSES.find((v) => v.toLowerCase() === s.replace(/\s+/g, "").toLowerCase());
		if (!status) throw badRequest(`status must be among ${STATUSES.join(", ")}.`, { fields: ["status"] });
		return status;
	});
}

/** A reward of the projection as the admin API shows it. */
function rewardView(row: ProjectedRewardRow) {
	return {
		rewarddtlid: row.rewarddtlid,
		userkey: row.userkey,
		campaignid: row.campaignid,
		eventname: row.eventname,
		usertype: row.usertype,
		reward: row.reward,
		rewardunit: row.rewardunit,
		rewardtype: row.rewardtype,
		rewardstatus: row.rewardstatus,
		redeemed: row.redeemed,
		comment: row.comment,
		payoutid: row.payoutid,
		payoutstate: row.payout_state,
		frienduserkey: row.friend_userkey,
		createdat: row.created_at,
		updatedat: row.updated_at,
		// Who referred whom, and why the reward was flagged: what a reviewer decides on (issue 24 item 4).
		...rewardPeople(row),
	};
}

/** Rewards across the app, newest first, filtered by status (comma-separated), campaign, user and creation date. */
rewardRoutes.get("/apps/:appid/rewards", async (c) => {
	const appid = c.req.param("appid");
	const { limit, after } = pageRequest(c, rewardCursor);
	const filter = {
		appid,
		statuses: statusFilter(c.req.query("status")),
		campaignid: campaignFilter(c.req.query("campaignid")),
		userkey: c.req.query("userkey")?.trim() || null,
		rewarddtlid: c.req.query("rewarddtlid")?.trim().slice(0, 200) || null,
		from: dateBound(c.req.query("from"), "from"),
		to: dateBound(c.req.query("to"), "to"),
		after,
		limit: limit + 1,
	};
	await requireAppId(c.env.DB, appid);
	const { items, nextcursor } = page(await listAppRewards(c.env, filter), limit, (r) => [r.created_at, r.rewarddtlid]);
	return c.json({
		rewards: items.map(rewardView),
		nextcursor,
	});
});

/**
 * One reward with what someone checking it needs (issue 48): its order id (`customid`, kept by its ledger), the
 * event it was granted for, and that event's Stripe payment. Three reads: the projection, the ledger, then the
 * event and payment in one D1 round trip.
 */
rewardRoutes.get("/apps/:appid/rewards/:rewarddtlid", async (c) => {
	const appid = c.req.param("appid");
	const rewarddtlid = c.req.param("rewarddtlid").slice(0, 200);
	await requireAppId(c.env.DB, appid);
	const filter = { appid, statuses: [], campaignid: null, userkey: null, rewarddtlid, from: null, to: null, after: null, limit: 1 };
	const [row] = await listAppRewards(c.env, filter);
	if (!row)
		throw new ApiError(404, "reward_not_found", "No reward with that rewarddtlid in this app (a new one shows once its ledger wrote it).");
	const customid = await ledgerFor(c.env, appid, row.userkey).rewardOrderId(rewarddtlid);
	const origin = customid ? await rewardOrigin(c.env.DB, appid, customid) : { event: null, payment: null };
	const { event, payment } = origin;
	return c.json({
		reward: { ...rewardView(row), customid },
		event: event && {
			customid: event.customid,
			userkey: event.userkey,
			eventname: event.eventname,
			transactionvalue: event.transactionvalue,
			createdat: event.created_at,
		},
		payment: payment && {
			invoice: payment.invoice,
			paymentintent: payment.payment_intent,
			charge: payment.charge,
			checkoutsession: payment.checkout_session,
			currency: payment.currency,
			// Stripe's minor units as whole units of the currency (domain/currency.ts: JPY has none, KWD three).
			amount: minorToUnits(payment.amount_minor, payment.currency),
			refunded: minorToUnits(payment.refunded_minor, payment.currency),
		},
	});
});

/** Approves / rejects / ... several rewards, all or none: the same path as changerewardstatus. */
rewardRoutes.post("/apps/:appid/rewards/status", async (c) => {
	const appid = c.req.param("appid");
	const { changes } = z.object({ changes: statusChangesSchema }).parse(await readJsonObject(c.req.raw));
	await requireAppId(c.env.DB, appid);
	const outcome = await changeRewardStatuses(c.env, appid, changes, { entryid: newAuditEntryId(), actor: authOf(c).actor });
	const updated = valueOrThrow(outcome);
	await flushProjection(c.env, appid, changes);
	return c.json({ updated });
});

/**
 * Waits for the changed ledgers to write their rewards into the projection,
 * so a list read after this answer (the dashboard's redirect to the review
 * queue) shows the new statuses instead of the ones the ledgers replaced.
 * A flush that fails is left to the ledger's alarm: the change itself is done.
 */
async function flushProjection(env: Env, appid: string, changes: { rewarddtlid: string }[]): Promise<void> {
	const owners = new Set(changes.map((change) => userkeyOfRewardId(change.rewarddtlid)).filter((k): k is string => !!k));
	await Promise.all(
		[...owners].map((userkey) =>
			ledgerFor(env, appid, userkey)
				.flush()
				.catch((error: unknown) => console.error("admin: projection flush after a status change failed", error)),
		),
	);
}
