import { nowIso } from "../domain/dates";
import { type AuditEntry, runAudited } from "./audit";

/** An app (tenant) as the service uses it; never carries the private key. */
export interface App {
	appid: string;
	name: string;
	apikey: string;
	privatekeyHash: string;
	webhookSecret: string;
	landingurl: string | null;
	webhookurl: string | null;
	emailsender: string | null;
	/** Origin allowed to frame the hosted referral page; null: the landing URL's origin. */
	frameorigin: string | null;
	/** IANA time zone of the app's analytics days (default UTC). */
	timezone: string;
	defaultCampaignId: number | null;
	createdAt: string;
	updatedAt: string;
}

interface AppRow {
	appid: string;
	name: string;
	apikey: string;
	privatekey_hash: string;
	webhook_secret: string;
	landingurl: string | null;
	webhookurl: string | null;
	emailsender: string | null;
	frameorigin: string | null;
	timezone: string | null;
	default_campaignid: number | null;
	created_at: string;
	updated_at: string;
}

const toApp = (row: AppRow): App => ({
	appid: row.appid,
	name: row.name,
	apikey: row.apikey,
	privatekeyHash: row.privatekey_hash,
	webhookSecret: row.webhook_secret,
	landingurl: row.landingurl,
	webhookurl: row.webhookurl,
	emailsender: row.emailsender,
	frameorigin: row.frameorigin ?? null,
	timezone: row.timezone ?? "UTC",
	defaultCampaignId: row.default_campaignid,
	createdAt: row.created_at,
	updatedAt: row.updated_at,
});

/** The app that owns `apikey`, or null. */
export async function findAppByApiKey(db: D1Database, apikey: string): Promise<App | null> {
	const row = await db.prepare("SELECT * FROM apps WHERE apikey = ?").bind(apikey).first<AppRow>();
	return row ? toApp(row) : null;
}

export async function findApp(db: D1Database, appid: string): Promise<App | null> {
	const row = await db.prepare("SELECT * FROM apps WHERE appid = ?").bind(appid).first<AppRow>();
	return row ? toApp(row) : null;
}

/** One page of apps, oldest first, after the app `after` (a cursor: the last appid of the previous page). */
export async function listApps(db: D1Database, limit: number, after?: string): Promise<App[]> {
	const { results } = await db
		.prepare(
			// One row-value range on apps_created: the first page starts after ('', ''); an unknown cursor (NULLs) matches nothing.
			`SELECT * FROM apps WHERE (created_at, appid) > (SELECT CASE WHEN ?1 IS NULL THEN '' ELSE MAX(created_at) END,
			   CASE WHEN ?1 IS NULL THEN '' ELSE MAX(appid) END FROM apps WHERE appid = ?1)
			 ORDER BY created_at, appid LIMIT ?2`,
		)
		.bind(after ?? null, limit)
		.all<AppRow>();
	return results.map(toApp);
}

export interface NewApp {
	appid: string;
	name: string;
	apikey: string;
	privatekeyHash: string;
	webhookSecret: string;
	landingurl: string | null;
	webhookurl: string | null;
	emailsender: string | null;
}

export async function insertApp(db: D1Database, app: NewApp, audit: AuditEntry): Promise<void> {
	const now = nowIso();
	const insert = db
		.prepare(
			`INSERT INTO apps (appid, name, apikey, privatekey_hash, webhook_secret, landingurl, webhookurl, emailsender, created_at, updated_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		)
		.bind(
			app.appid,
			app.name,
			app.apikey,
			app.privatekeyHash,
			app.webhookSecret,
			app.landingurl,
			app.webhookurl,
			app.emailsender,
			now,
			now,
		);
	await runAudited(db, insert, audit);
}

export type AppChanges = Partial<
	Pick<
		App,
		| "name"
		| "landingurl"
		| "webhookurl"
		| "emailsender"
		| "frameorigin"
		| "timezone"
		| "privatekeyHash"
		| "webhookSecret"
		| "defaultCampaignId"
	>
>;

const APP_COLUMNS: Record<keyof AppChanges, string> = {
	name: "name",
	landingurl: "landingurl",
	webhookurl: "webhookurl",
	emailsender: "emailsender",
	frameorigin: "frameorigin",
	timezone: "timezone",
	privatekeyHash: "privatekey_hash",
	webhookSecret: "webhook_secret",
	defaultCampaignId: "default_campaignid",
};

/** Applies the given changes with their audit entry; returns false when the app does not exist (nothing is recorded then). */
export async function updateApp(db: D1Database, appid: string, changes: AppChanges, audit: AuditEntry): Promise<boolean> {
	const entries = Object.entries(changes).filter(([, v]) => v !== undefined) as [keyof AppChanges, string | number | null][];
	const sets = entries.map(([key]) => `${APP_COLUMNS[key]} = ?`);
	// A default campaign must be one of the app's own: checked in the write itself, so nothing changes otherwise.
	const guard =
		changes.defaultCampaignId != null ? " AND EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ? AND appid = apps.appid)" : "";
	const update = db
		.prepare(`UPDATE apps SET ${[...sets, "updated_at = ?"].join(", ")} WHERE appid = ?${guard}`)
		.bind(...entries.map(([, v]) => v), nowIso(), appid, ...(guard ? [changes.defaultCampaignId] : []));
	const result = await runAudited(db, update, audit);
	return result.meta.changes > 0;
}
