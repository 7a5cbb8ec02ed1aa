import { type AuditEntry, auditStatement } from "./audit";
import { campaignsChanged } from "./campaign-writes";
import { onEveryShard } from "./fanout";
import { firstRowOf } from "./rows";
import type { ShardPool } from "./shards";

/** Whether a shard holds a reward of the campaign (rewards_campaign: one seek). */
const campaignHasRewards = (campaignid: number) => async (db: D1Database) =>
	(await db.prepare("SELECT 1 AS found FROM rewards WHERE campaignid = ? LIMIT 1").bind(campaignid).first()) !== null;

/**
 * Archiving and deleting a campaign (issue 48; docs/operators.md, "Building
 * a campaign"). An archived campaign records no new conversion (its events
 * are refused: operations/conversion-work.ts) and is hidden from the
 * console's pickers; its rules, rewards and history stay, and it can be
 * restored. A campaign is deleted only while nothing references it.
 */

/** The app's default campaign is never archived: register would put new users into a campaign that earns nothing. */
const NOT_DEFAULT = "NOT EXISTS (SELECT 1 FROM apps WHERE default_campaignid = campaigns.campaignid AND (appid = ?3 OR live_appid = ?3))";

export type ArchiveOutcome = { ok: true; changed: boolean } | { ok: false; reason: "campaign_not_found" | "campaign_is_default" };

/**
 * Archives (`archive` true) or restores the campaign at `now`, with its
 * audit entry when it changed, in one batch. Archiving is guarded in the
 * write itself against the campaign becoming the default meanwhile.
 */
export async function setCampaignArchived(
	db: D1Database,
	appid: string,
	campaignid: number,
	archive: boolean,
	now: string,
	audit: AuditEntry,
): Promise<ArchiveOutcome> {
	const update = archive
		? db.prepare(
				`UPDATE campaigns SET archived_at = ?1, updated_at = ?1 WHERE campaignid = ?2 AND appid = ?3 AND archived_at IS NULL AND ${NOT_DEFAULT}`,
			)
		: db.prepare(
				"UPDATE campaigns SET archived_at = NULL, updated_at = ?1 WHERE campaignid = ?2 AND appid = ?3 AND archived_at IS NOT NULL",
			);
	const [result, , state] = await db.batch([
		update.bind(now, campaignid, appid),
		auditStatement(db, audit, { onlyIfChanged: true }),
		db
			.prepare(
				`SELECT archived_at, EXISTS (SELECT 1 FROM apps WHERE appid = ?2 AND default_campaignid = ?1) AS isdefault
				 FROM campaigns WHERE campaignid = ?1 AND appid = ?2`,
			)
			.bind(campaignid, appid),
	]);
	campaignsChanged();
	const row = firstRowOf<{ archived_at: string | null; isdefault: number }>(state);
	if (!row) return { ok: false, reason: "campaign_not_found" };
	const changed = (result?.meta.changes ?? 0) > 0;
	if (archive && !changed && row.archived_at === null && row.isdefault === 1) return { ok: false, reason: "campaign_is_default" };
	return { ok: true, changed };
}

/** What keeps a campaign from being deleted: the first kind of record found that references it. */
export type CampaignReference = "default" | "users" | "conversions" | "rewards";

export type DeleteOutcome =
	| { ok: true }
	| { ok: false; reason: "campaign_not_found" }
	| { ok: false; reason: "referenced"; by: CampaignReference };

/**
 * Deletes the campaign with its rules, social actions, coupon pool and
 * emails, in one batch, only while nothing references it: not the default,
 * no user in it, no reward granted by it (one seek each: migration 0043),
 * no conversion against it still waiting for its rewards (the few events
 * of conversion_events_grants_pending). An event that earned nothing keeps
 * no campaign (docs/operators.md). Every delete repeats the guard, so a
 * user joining between the check and the write leaves everything in place.
 */
export async function deleteUnreferencedCampaign(
	db: D1Database,
	appid: string,
	campaignid: number,
	audit: AuditEntry,
	pool: ShardPool | null = null,
): Promise<DeleteOutcome> {
	const unreferenced = `NOT EXISTS (SELECT 1 FROM apps WHERE default_campaignid = ?1 AND (appid = ?2 OR live_appid = ?2))
		AND NOT EXISTS (SELECT 1 FROM users WHERE campaignid = ?1)
		AND NOT EXISTS (SELECT 1 FROM conversion_events WHERE grants_pending IS NOT NULL AND campaignid = ?1)
		AND NOT EXISTS (SELECT 1 FROM rewards WHERE campaignid = ?1)
		AND EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ?1 AND appid = ?2)`;
	const [refs] = await db.batch([
		db
			.prepare(
				`SELECT EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ?1 AND appid = ?2) AS found,
				   EXISTS (SELECT 1 FROM apps WHERE default_campaignid = ?1 AND (appid = ?2 OR live_appid = ?2)) AS isdefault,
				   EXISTS (SELECT 1 FROM users WHERE campaignid = ?1) AS users,
				   EXISTS (SELECT 1 FROM conversion_events WHERE grants_pending IS NOT NULL AND campaignid = ?1) AS conversions,
				   EXISTS (SELECT 1 FROM rewards WHERE campaignid = ?1) AS rewards`,
			)
			.bind(campaignid, appid),
	]);
	const found = firstRowOf<{ found: number; isdefault: number; users: number; conversions: number; rewards: number }>(refs);
	if (!found?.found) return { ok: false, reason: "campaign_not_found" };
	const by: CampaignReference | null = found.isdefault
		? "default"
		: found.users
			? "users"
			: found.conversions
				? "conversions"
				: found.rewards
					? "rewards"
					: null;
	if (by) return { ok: false, reason: "referenced", by };
	// A sharded app's rewards are in their owners' shards (issue 50 phase 2b-1): one seek of rewards_campaign in each.
	// Asked before the guarded deletes, not inside them: a reward of the campaign is granted only for an event of a
	// user in it (or that user's referrer), and the deletes' own guard still refuses once any user is in it.
	if (pool && (await onEveryShard(pool, campaignHasRewards(campaignid))).some(Boolean))
		return { ok: false, reason: "referenced", by: "rewards" };
	const results = await db.batch([
		db.prepare(`DELETE FROM reward_rules WHERE campaignid = ?1 AND ${unreferenced}`).bind(campaignid, appid),
		db.prepare(`DELETE FROM social_actions WHERE campaignid = ?1 AND ${unreferenced}`).bind(campaignid, appid),
		db.prepare(`DELETE FROM coupons WHERE campaignid = ?1 AND ${unreferenced}`).bind(campaignid, appid),
		db.prepare(`DELETE FROM campaign_messages WHERE campaignid = ?1 AND ${unreferenced}`).bind(campaignid, appid),
		db.prepare(`DELETE FROM campaigns WHERE campaignid = ?1 AND ${unreferenced}`).bind(campaignid, appid),
		auditStatement(db, audit, { onlyIfChanged: true }),
	]);
	campaignsChanged();
	// Referenced between the read and the batch: every guarded delete matched nothing.
	if ((results[4]?.meta.changes ?? 0) === 0) return deleteUnreferencedCampaign(db, appid, campaignid, audit, pool);
	return { ok: true };
}
