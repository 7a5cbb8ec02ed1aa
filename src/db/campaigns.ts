import { z } from "zod";
import { nowIso } from "../domain/dates";
import { DEFAULT_NAME_STYLE, LEADERBOARD_NAME_STYLES, type LeaderboardNameStyle } from "../domain/display-name";
import type { RewardEmailMode } from "../domain/messages";
import { FRAUD_SIGNALS, type FraudSignal } from "../fraud/signals";
import { type AuditEntry, auditStatement } from "./audit";
import { campaignsChanged } from "./campaign-writes";
import { firstRowOf, rowsOf } from "./rows";
import { parseStoredJson } from "./stored-json";

export type Distribution = "InstoreCredits" | "Coupon" | "Stripe";

export interface RewardRule {
	ruleid: number;
	campaignid: number;
	rewardusertype: "Friend" | "Referrer";
	eventname: string;
	reward: number;
	rewardunit: string;
	rewardfrequency: number;
	mintranvalue: number;
	maxrewardamount: number;
	categories: unknown;
	inclusionsandexclusions: unknown[];
	/** Referrer rules: the n-th reward is worth the tier with the largest fromcount <= n (docs/rewards.md, "Tiers"); [] for none. */
	tiers: RuleTier[];
	/** Only events within this many calendar months of the friend's first such event earn (docs/rewards.md, "Recurring windows"); 0: no window. */
	recurringmonths: number;
	/** Referrer rules: one reward when the N-th distinct friend has the event (docs/rewards.md, "Milestones"); 0: not a milestone. */
	milestone: number;
}

/** One tier of a rule: from the `fromcount`-th reward on, each is worth `reward` (in the rule's unit). */
export interface RuleTier {
	fromcount: number;
	reward: number;
}

export interface SocialAction {
	campaignsocialactionid: number;
	socialactionid: string;
	socialactionname: string;
	sharemessage: string;
	sharetitle: string;
	shareimageurl: string;
	displayorder: number;
	sharemessagetype: number;
}

export interface Campaign {
	campaignid: number;
	appid: string;
	campaignname: string;
	offertitle: string;
	offerdescription: string;
	campaignbgcolor: string;
	campaignstartdate: string;
	/** From this moment (ISO) the campaign's events earn nothing; null: it never ends. */
	campaignenddate: string | null;
	widgetfont: string;
	customdomain: string;
	rewardtype: number;
	terms: string;
	distribution: Distribution;
	holddays: number;
	autoapprove: boolean;
	growthhack: string;
	/** Unit of rewards computed as a percent of a transaction value. */
	currency: string;
	/** Fraud signals that make a reward Suspicious; null means all (docs/fraud.md). The others only flag it. */
	suspicioussignals: FraudSignal[] | null;
	/** Referred sign-ups per hour above which `velocity` fires; 0 disables it. */
	velocitythreshold: number;
	/** The share page shows the user's rank among this month's referrers (docs/rewards.md, "Leaderboards"). */
	showleaderboard: boolean;
	/** How referrers are named on its public board (domain/display-name.ts; issue 47). */
	leaderboardnames: LeaderboardNameStyle;
	/** Whether it sends the reward-earned email (docs/messages.md); set by its own route, so absent from the fields a campaign is made with. */
	rewardemail?: RewardEmailMode;
	/** When it was archived (issue 48, db/campaign-archive.ts): it records no new conversion; null while active. */
	archivedAt: string | null;
	createdAt: string;
	updatedAt: string;
}

export interface CampaignWithDetails extends Campaign {
	rewardrules: RewardRule[];
	socialactions: SocialAction[];
}

export interface CampaignRow
	extends Omit<
		Campaign,
		"autoapprove" | "suspicioussignals" | "showleaderboard" | "leaderboardnames" | "archivedAt" | "createdAt" | "updatedAt"
	> {
	autoapprove: number;
	/** Absent from rows read before migration 0043 ran (a test database built without it). */
	archived_at?: string | null;
	showleaderboard: number;
	leaderboardnames: string;
	suspicioussignals: string | null;
	created_at: string;
	updated_at: string;
}

export interface RuleRow extends Omit<RewardRule, "categories" | "inclusionsandexclusions" | "tiers"> {
	categories: string | null;
	inclusionsandexclusions: string;
	tiers: string | null;
}

/** The JSON columns of campaigns and reward_rules, as the admin API writes them. */
const suspiciousSignalsJson = z.array(z.enum(FRAUD_SIGNALS));
const categoriesJson = z.unknown();
const inclusionsJson = z.array(z.unknown());
const tiersJson = z.array(z.object({ fromcount: z.number().int(), reward: z.number() }));

/** A stored name style (written only through the admin API's enum); an unknown one reads as the default. */
export const nameStyleOf = (stored: string | null | undefined): LeaderboardNameStyle =>
	LEADERBOARD_NAME_STYLES.find((style) => style === stored) ?? DEFAULT_NAME_STYLE;

export const toCampaign = ({
	autoapprove,
	suspicioussignals,
	showleaderboard,
	leaderboardnames,
	archived_at,
	created_at,
	updated_at,
	...rest
}: CampaignRow): Campaign => ({
	...rest,
	archivedAt: archived_at ?? null,
	autoapprove: autoapprove === 1,
	showleaderboard: showleaderboard === 1,
	leaderboardnames: nameStyleOf(leaderboardnames),
	suspicioussignals:
		suspicioussignals === null ? null : parseStoredJson("campaigns", "suspicioussignals", suspicioussignals, suspiciousSignalsJson),
	createdAt: created_at,
	updatedAt: updated_at,
});

export const toRule = (row: RuleRow): RewardRule => ({
	...row,
	categories: row.categories === null ? null : parseStoredJson("reward_rules", "categories", row.categories, categoriesJson),
	inclusionsandexclusions: parseStoredJson("reward_rules", "inclusionsandexclusions", row.inclusionsandexclusions, inclusionsJson),
	tiers: row.tiers === null ? [] : parseStoredJson("reward_rules", "tiers", row.tiers, tiersJson),
	recurringmonths: row.recurringmonths ?? 0,
	milestone: row.milestone ?? 0,
});

/** `{ found: 1 }` when the campaign is the app's. */
export function campaignFoundLookup(db: Pick<D1Database, "prepare">, appid: string, campaignid: number): D1PreparedStatement {
	return db.prepare("SELECT 1 AS found FROM campaigns WHERE campaignid = ? AND appid = ?").bind(campaignid, appid);
}

/** Fields an admin sets on a campaign (all but identity and timestamps). */
export type CampaignFields = Omit<Campaign, "campaignid" | "appid" | "archivedAt" | "createdAt" | "updatedAt">;
export type RuleFields = Omit<RewardRule, "ruleid" | "campaignid">;
export type SocialActionFields = Omit<SocialAction, "campaignsocialactionid">;

const CAMPAIGN_COLUMNS = [
	"campaignname",
	"offertitle",
	"offerdescription",
	"campaignbgcolor",
	"campaignstartdate",
	"campaignenddate",
	"widgetfont",
	"customdomain",
	"rewardtype",
	"terms",
	"distribution",
	"holddays",
	"autoapprove",
	"growthhack",
	"currency",
	"suspicioussignals",
	"velocitythreshold",
	"showleaderboard",
	"leaderboardnames",
] as const satisfies readonly (keyof CampaignFields)[];

const columnValue = (fields: Partial<CampaignFields>, column: (typeof CAMPAIGN_COLUMNS)[number]) => {
	const value = fields[column];
	if (Array.isArray(value)) return JSON.stringify(value);
	return typeof value === "boolean" ? Number(value) : (value ?? null);
};

/** The id of the app's newest campaign, usable inside the batch that inserted it. */
const NEWEST_CAMPAIGN = "(SELECT MAX(campaignid) FROM campaigns WHERE appid = ?)";

/** A rule that still fires: retired rules are kept for history only (docs/rewards.md). */
export const ACTIVE_RULE = "retired_at IS NULL";

/** A rule's columns after `position`, in the order both statements name them: one list for its insert and its update. */
function ruleValues(rule: RuleFields) {
	return [
		rule.rewardusertype,
		rule.eventname,
		rule.reward,
		rule.rewardunit,
		rule.rewardfrequency,
		rule.mintranvalue,
		rule.maxrewardamount,
		rule.categories === null || rule.categories === undefined ? null : JSON.stringify(rule.categories),
		JSON.stringify(rule.inclusionsandexclusions ?? []),
		rule.tiers && rule.tiers.length > 0 ? JSON.stringify(rule.tiers) : null,
		rule.recurringmonths ?? 0,
		rule.milestone ?? 0,
	];
}

function ruleInserts(db: D1Database, campaignRef: string, refArgs: unknown[], rules: RuleFields[], firstPosition = 0) {
	return rules.map((rule, i) =>
		db
			.prepare(
				`INSERT INTO reward_rules (campaignid, position, rewardusertype, eventname, reward, rewardunit, rewardfrequency,
				 mintranvalue, maxrewardamount, categories, inclusionsandexclusions, tiers, recurringmonths, milestone)
				 VALUES (${campaignRef}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			)
			.bind(...refArgs, firstPosition + i, ...ruleValues(rule)),
	);
}

function socialActionInserts(db: D1Database, campaignRef: string, refArgs: unknown[], actions: SocialActionFields[]) {
	return actions.map((action) =>
		db
			.prepare(
				`INSERT INTO social_actions (campaignid, socialactionid, socialactionname, sharemessage, sharetitle, shareimageurl,
				 displayorder, sharemessagetype) VALUES (${campaignRef}, ?, ?, ?, ?, ?, ?, ?)`,
			)
			.bind(
				...refArgs,
				action.socialactionid,
				action.socialactionname,
				action.sharemessage,
				action.sharetitle,
				action.shareimageurl,
				action.displayorder,
				action.sharemessagetype,
			),
	);
}

/**
 * Creates a campaign with its rules and social actions in one transaction;
 * the app's first campaign becomes its default. Returns the new id.
 */
export async function insertCampaign(
	db: D1Database,
	appid: string,
	fields: CampaignFields,
	rules: RuleFields[],
	actions: SocialActionFields[],
	audit: AuditEntry,
): Promise<number> {
	const now = nowIso();
	const results = await db.batch([
		db
			.prepare(
				`INSERT INTO campaigns (appid, ${CAMPAIGN_COLUMNS.join(", ")}, created_at, updated_at)
				 VALUES (?, ${CAMPAIGN_COLUMNS.map(() => "?").join(", ")}, ?, ?)`,
			)
			.bind(appid, ...CAMPAIGN_COLUMNS.map((c) => columnValue(fields, c)), now, now),
		...ruleInserts(db, NEWEST_CAMPAIGN, [appid], rules),
		...socialActionInserts(db, NEWEST_CAMPAIGN, [appid], actions),
		// The test twin shares the setting (db/apps.ts SHARED_COLUMNS).
		db
			.prepare(`UPDATE apps SET default_campaignid = COALESCE(default_campaignid, ${NEWEST_CAMPAIGN}) WHERE appid = ? OR live_appid = ?`)
			.bind(appid, appid, appid),
		auditStatement(db, audit, { targetIdSql: { sql: NEWEST_CAMPAIGN, args: [appid] } }),
		db.prepare(`SELECT ${NEWEST_CAMPAIGN} AS campaignid`).bind(appid),
	]);
	campaignsChanged();
	const last = firstRowOf<{ campaignid: number }>(results.at(-1));
	if (!last) throw new Error("campaign insert returned no id");
	return last.campaignid;
}

/** A rule of a PATCH: with the `ruleid` of an active rule of the campaign it updates that rule in place; without, it is new. */
export type RuleUpdate = RuleFields & { ruleid?: number };

export type UpdateOutcome =
	| { ok: true }
	| { ok: false; reason: "campaign_not_found" }
	| { ok: false; reason: "unknown_rule"; ruleid: number };

/**
 * Updates the fields given. `rules`, when given, is the campaign's whole new
 * list, matched by `ruleid` (docs/rewards.md, "Rule identity"): a rule named
 * is updated in place and keeps its id, so its frequency history and the
 * decisions that cite it stay valid; a rule without an id is created; an
 * active rule left out is retired (kept, never fires again). `actions`
 * replaces the social actions. All in one transaction.
 */
export async function updateCampaign(
	db: D1Database,
	appid: string,
	campaignid: number,
	fields: Partial<CampaignFields>,
	rules: RuleUpdate[] | undefined,
	actions: SocialActionFields[] | undefined,
	audit: AuditEntry,
): Promise<UpdateOutcome> {
	const now = nowIso();
	const columns = CAMPAIGN_COLUMNS.filter((c) => fields[c] !== undefined);
	const statements = [
		db
			.prepare(
				`UPDATE campaigns SET ${[...columns.map((c) => `${c} = ?`), "updated_at = ?"].join(", ")} WHERE campaignid = ? AND appid = ?`,
			)
			.bind(...columns.map((c) => columnValue(fields, c)), now, campaignid, appid),
	];
	// Ownership and the active rules are checked first, so a foreign campaign or an unknown ruleid changes nothing.
	const [owned, active] = await db.batch([
		campaignFoundLookup(db, appid, campaignid),
		db.prepare(`SELECT ruleid FROM reward_rules WHERE campaignid = ? AND ${ACTIVE_RULE}`).bind(campaignid),
	]);
	if (!owned?.results.length) return { ok: false, reason: "campaign_not_found" };
	if (rules) {
		const activeIds = new Set(rowsOf<{ ruleid: number }>(active).map((r) => r.ruleid));
		const unknown = rules.find((r) => r.ruleid !== undefined && !activeIds.has(r.ruleid));
		if (unknown?.ruleid !== undefined) return { ok: false, reason: "unknown_rule", ruleid: unknown.ruleid };
		const kept = rules.flatMap((r) => (r.ruleid === undefined ? [] : [r.ruleid]));
		statements.push(
			db
				.prepare(
					`UPDATE reward_rules SET retired_at = ? WHERE campaignid = ? AND ${ACTIVE_RULE}
					 AND ruleid NOT IN (SELECT value FROM json_each(?))`,
				)
				.bind(now, campaignid, JSON.stringify(kept)),
		);
		rules.forEach((rule, position) => {
			if (rule.ruleid === undefined) statements.push(...ruleInserts(db, "?", [campaignid], [rule], position));
			else statements.push(ruleUpdate(db, campaignid, rule.ruleid, rule, position));
		});
	}
	if (actions) {
		statements.push(db.prepare("DELETE FROM social_actions WHERE campaignid = ?").bind(campaignid));
		statements.push(...socialActionInserts(db, "?", [campaignid], actions));
	}
	statements.push(auditStatement(db, audit));
	await db.batch(statements);
	campaignsChanged();
	return { ok: true };
}

function ruleUpdate(db: D1Database, campaignid: number, ruleid: number, rule: RuleFields, position: number) {
	return db
		.prepare(
			`UPDATE reward_rules SET position = ?, rewardusertype = ?, eventname = ?, reward = ?, rewardunit = ?, rewardfrequency = ?,
			   mintranvalue = ?, maxrewardamount = ?, categories = ?, inclusionsandexclusions = ?, tiers = ?, recurringmonths = ?, milestone = ?
			 WHERE ruleid = ? AND campaignid = ?`,
		)
		.bind(position, ...ruleValues(rule), ruleid, campaignid);
}

/** One campaign of the app with its rules and social actions (one round trip), or null. */
export async function getCampaignWithDetails(db: D1Database, appid: string, campaignid: number): Promise<CampaignWithDetails | null> {
	const [campaign, rules, actions] = await db.batch([
		db.prepare("SELECT * FROM campaigns WHERE campaignid = ? AND appid = ?").bind(campaignid, appid),
		db
			.prepare(
				`SELECT r.* FROM reward_rules r JOIN campaigns c USING (campaignid) WHERE r.campaignid = ? AND c.appid = ? AND r.${ACTIVE_RULE}
				 ORDER BY r.position`,
			)
			.bind(campaignid, appid),
		db
			.prepare(
				`SELECT s.* FROM social_actions s JOIN campaigns c USING (campaignid) WHERE s.campaignid = ? AND c.appid = ?
				 ORDER BY s.displayorder, s.campaignsocialactionid`,
			)
			.bind(campaignid, appid),
	]);
	const row = firstRowOf<CampaignRow>(campaign);
	if (!row) return null;
	return {
		...toCampaign(row),
		rewardrules: rowsOf<RuleRow>(rules).map(toRule),
		socialactions: rowsOf<SocialAction>(actions),
	};
}

/** The campaign itself (no rules), or null when it is not the app's. */
export async function getCampaign(db: D1Database, appid: string, campaignid: number): Promise<Campaign | null> {
	const row = await db.prepare("SELECT * FROM campaigns WHERE campaignid = ? AND appid = ?").bind(campaignid, appid).first<CampaignRow>();
	return row ? toCampaign(row) : null;
}
