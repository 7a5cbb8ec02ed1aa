import { z } from "zod";
import { nowIso } from "../domain/dates";
import { LANGS, type Lang, type MessageKind, REWARD_EMAIL_MODES, type RewardEmailMode, type Template } from "../domain/messages";
import { type AuditEntry, auditStatement } from "./audit";
import { campaignsChanged } from "./campaign-writes";
import { firstRowOf, rowsOf } from "./rows";

/**
 * A campaign's own text of the emails it sends (campaign_messages, migration
 * 0029; docs/messages.md): one row per kind and language. Every read is by
 * the primary key's prefix (campaignid, kind): at most one row per language.
 */

const messageRow = z.object({ language: z.enum(LANGS), subject: z.string(), body: z.string() });

/** The campaign's templates of `kind`, by language (empty: it uses the defaults). The caller checked the campaign is the app's. */
export async function campaignMessages(db: D1Database, campaignid: number, kind: MessageKind): Promise<Map<Lang, Template>> {
	const { results } = await db
		.prepare("SELECT language, subject, body FROM campaign_messages WHERE campaignid = ? AND kind = ?")
		.bind(campaignid, kind)
		.all();
	// Read through zod: a row whose language the CHECK allowed but this code no longer knows fails loudly, not silently.
	return new Map(results.map((row) => messageRow.parse(row)).map((row) => [row.language, { subject: row.subject, body: row.body }]));
}

/** The guard every write carries: the campaign is `appid`'s (a campaign id of another app changes nothing). */
const OWN_CAMPAIGN = "EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ?1 AND appid = ?2)";

/** Saves the campaign's template of `kind` in `lang`, with its audit entry; false when the campaign is not the app's. */
export async function saveCampaignMessage(
	db: D1Database,
	appid: string,
	campaignid: number,
	kind: MessageKind,
	lang: Lang,
	template: Template,
	audit: AuditEntry,
): Promise<boolean> {
	const upsert = db
		.prepare(
			`INSERT INTO campaign_messages (campaignid, kind, language, subject, body, updated_at)
			 SELECT ?1, ?3, ?4, ?5, ?6, ?7 WHERE ${OWN_CAMPAIGN}
			 ON CONFLICT (campaignid, kind, language) DO UPDATE SET subject = excluded.subject, body = excluded.body, updated_at = excluded.updated_at`,
		)
		.bind(campaignid, appid, kind, lang, template.subject, template.body, nowIso());
	const [result] = await db.batch([upsert, auditStatement(db, audit, { onlyIfChanged: true })]);
	return (result?.meta.changes ?? 0) > 0;
}

/** Removes the campaign's template of `kind` in `lang` (the default applies again); false when there was none. */
export async function deleteCampaignMessage(
	db: D1Database,
	appid: string,
	campaignid: number,
	kind: MessageKind,
	lang: Lang,
	audit: AuditEntry,
): Promise<boolean> {
	const remove = db
		.prepare(`DELETE FROM campaign_messages WHERE campaignid = ?1 AND kind = ?3 AND language = ?4 AND ${OWN_CAMPAIGN}`)
		.bind(campaignid, appid, kind, lang);
	const [result] = await db.batch([remove, auditStatement(db, audit, { onlyIfChanged: true })]);
	return (result?.meta.changes ?? 0) > 0;
}

/** What a user's reward-earned emails need of D1 (db/messages.ts `rewardEmailContext`). */
export interface RewardEmailContext {
	user: {
		email: string | null;
		name: string | null;
		referralcode: string;
		customdomain: string | null;
		erased: boolean;
		language: string | null;
	} | null;
	app: { name: string; logourl: string | null; accentcolor: string | null; emailsender: string | null } | null;
	campaigns: Map<
		number,
		{
			campaignname: string;
			offertitle: string;
			offerdescription: string;
			rewardemail: RewardEmailMode;
			templates: Map<Lang, Template>;
		}
	>;
}

const rewardEmailCampaign = z.object({
	campaignname: z.string(),
	offertitle: z.string().nullable(),
	offerdescription: z.string().nullable(),
	rewardemail: z.enum(REWARD_EMAIL_MODES),
});

/**
 * Everything the reward-earned emails of one user's rewards need, in ONE
 * round trip (a ledger's flush, src/ledger/reward-emails.ts): the user by its
 * unique key, the app by its key, and per campaign its row and its `reward`
 * templates (primary key reads, one or two campaigns a flush).
 */
export async function rewardEmailContext(
	db: D1Database,
	appid: string,
	userkey: string,
	campaignids: readonly number[],
): Promise<RewardEmailContext> {
	const results = await db.batch<Record<string, unknown>>([
		db
			.prepare(
				`SELECT u.email, u.name, u.referralcode, u.erased_at IS NOT NULL AS erased, u.language, c.customdomain FROM users u
				 LEFT JOIN campaigns c ON c.campaignid = u.campaignid WHERE u.userkey = ? AND u.appid = ?`,
			)
			.bind(userkey, appid),
		db.prepare("SELECT name, logourl, accentcolor, emailsender FROM apps WHERE appid = ?").bind(appid),
		...campaignids.flatMap((campaignid) => [
			db.prepare("SELECT campaignname, offertitle, offerdescription, rewardemail FROM campaigns WHERE campaignid = ?").bind(campaignid),
			db.prepare("SELECT language, subject, body FROM campaign_messages WHERE campaignid = ? AND kind = 'reward'").bind(campaignid),
		]),
	]);
	const user = firstRowOf<{
		email: string | null;
		name: string | null;
		referralcode: string;
		erased: number;
		customdomain: string | null;
		language: string | null;
	}>(results[0]);
	const campaigns: RewardEmailContext["campaigns"] = new Map();
	campaignids.forEach((campaignid, i) => {
		const row = firstRowOf<Record<string, unknown>>(results[2 + 2 * i]);
		if (!row) return;
		const campaign = rewardEmailCampaign.parse(row);
		const templates = new Map(
			rowsOf<Record<string, unknown>>(results[3 + 2 * i])
				.map((t) => messageRow.parse(t))
				.map((t) => [t.language, { subject: t.subject, body: t.body }] as const),
		);
		campaigns.set(campaignid, {
			campaignname: campaign.campaignname,
			offertitle: campaign.offertitle ?? "",
			offerdescription: campaign.offerdescription ?? "",
			rewardemail: campaign.rewardemail,
			templates,
		});
	});
	return {
		user: user ? { ...user, erased: user.erased === 1 } : null,
		app: firstRowOf<NonNullable<RewardEmailContext["app"]>>(results[1]) ?? null,
		campaigns,
	};
}

/** A campaign's reward-email setting (docs/messages.md); null when the campaign is not the app's. */
export async function campaignRewardEmail(db: D1Database, appid: string, campaignid: number): Promise<RewardEmailMode | null> {
	const row = await db
		.prepare("SELECT rewardemail FROM campaigns WHERE campaignid = ? AND appid = ?")
		.bind(campaignid, appid)
		.first<{ rewardemail: string }>();
	return row ? z.enum(REWARD_EMAIL_MODES).parse(row.rewardemail) : null;
}

/** Sets a campaign's reward-email setting, with its audit entry; false when the campaign is not the app's. */
export async function saveCampaignRewardEmail(
	db: D1Database,
	appid: string,
	campaignid: number,
	mode: RewardEmailMode,
	audit: AuditEntry,
): Promise<boolean> {
	const [result] = await db.batch([
		db.prepare("UPDATE campaigns SET rewardemail = ? WHERE campaignid = ? AND appid = ?").bind(mode, campaignid, appid),
		auditStatement(db, audit, { onlyIfChanged: true }),
	]);
	campaignsChanged();
	return (result?.meta.changes ?? 0) > 0;
}

/** Keeps the language the product gave for a user (docs/messages.md), for the emails sent without a call. */
export async function rememberLanguage(db: D1Database, userid: number, language: Lang): Promise<void> {
	await db.prepare("UPDATE users SET language = ?1 WHERE userid = ?2 AND language IS NOT ?1").bind(language, userid).run();
}
