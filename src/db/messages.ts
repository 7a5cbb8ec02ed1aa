import { z } from "zod";
import { nowIso } from "../domain/dates";
import { LANGS, type Lang, type MessageKind, type Template } from "../domain/messages";
import { type AuditEntry, auditStatement } from "./audit";

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
