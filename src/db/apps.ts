import { nowIso } from "../domain/dates";
import { type Layout, layoutSchema } from "./app-layout";
import { type AuditEntry, auditStatement, runAudited } from "./audit";

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
	/** The app's logo (an https URL) and accent colour (#rrggbb) on its share page, widget and emails (docs/messages.md). */
	logourl: string | null;
	accentcolor: string | null;
	defaultCampaignId: number | null;
	/** Members sign in to the dashboard with a passkey (issue 32, docs/operators.md "Passkeys"). */
	requirePasskeys: boolean;
	createdAt: string;
	updatedAt: string;
	/** False for the test twin of an app (test keys, docs/test-mode.md). */
	livemode: boolean;
	/** The live app of a test twin; its own appid for a live app (the appid admin routes and the dashboard know). */
	liveAppid: string;
	/** Whose campaigns the app reads: a twin shares its live app's campaigns. */
	campaignAppid: string;
	/**
	 * The app has events recorded in D1 before the event gate (migration 0046): a gate miss then asks D1. Read from
	 * auth's cache by a conversion (issue 49): a mark cleared by the backfill is seen within its 30 s.
	 */
	legacyEvents: boolean;
	/** Where its projection rows live (issue 50, migration 0049): the control database, or its owners' shards. */
	layout: Layout;
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
	logourl: string | null;
	accentcolor: string | null;
	default_campaignid: number | null;
	require_passkeys: number | null;
	created_at: string;
	updated_at: string;
	live_appid: string | null;
	legacy_events: number | null;
	layout?: string | null;
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
	logourl: row.logourl ?? null,
	accentcolor: row.accentcolor ?? null,
	defaultCampaignId: row.default_campaignid,
	requirePasskeys: row.require_passkeys === 1,
	createdAt: row.created_at,
	updatedAt: row.updated_at,
	livemode: row.live_appid === null,
	liveAppid: row.live_appid ?? row.appid,
	campaignAppid: row.live_appid ?? row.appid,
	legacyEvents: row.legacy_events === 1,
	layout: layoutSchema.catch("one").parse(row.layout),
});

/** The appid of an app's test twin (docs/test-mode.md). */
export const testAppid = (appid: string) => `${appid}_test`;
/** Whether `appid` is a test twin's (migrations/0026): what its keys make is test data. */
export const isTestAppid = (appid: string) => appid.endsWith("_test");

/** The app that owns `apikey`, or null. */
export async function findAppByApiKey(db: D1Database, apikey: string): Promise<App | null> {
	const row = await db.prepare("SELECT * FROM apps WHERE apikey = ?").bind(apikey).first<AppRow>();
	return row ? toApp(row) : null;
}

/** The app `appid` (live or a test twin), or null. */
export async function findApp(db: D1Database, appid: string): Promise<App | null> {
	const row = await db.prepare("SELECT * FROM apps WHERE appid = ?").bind(appid).first<AppRow>();
	return row ? toApp(row) : null;
}

/** The test twin of the live app `appid`, or null when it has none (apps_live). */
export async function findTestApp(db: D1Database, appid: string): Promise<App | null> {
	const row = await db.prepare("SELECT * FROM apps WHERE live_appid = ?").bind(appid).first<AppRow>();
	return row ? toApp(row) : null;
}

/** One page of apps, oldest first, after the app `after` (a cursor: the last appid of the previous page). */
export async function listApps(db: D1Database, limit: number, after?: string): Promise<App[]> {
	const { results } = await db
		.prepare(
			// One row-value range on apps_created: the first page starts after ('', ''); an unknown cursor (NULLs) matches nothing.
			// Test twins are not listed: they are reached through their live app (?mode=test). At most one twin per app is skipped.
			`SELECT * FROM apps WHERE (created_at, appid) > (SELECT CASE WHEN ?1 IS NULL THEN '' ELSE MAX(created_at) END,
			   CASE WHEN ?1 IS NULL THEN '' ELSE MAX(appid) END FROM apps WHERE appid = ?1) AND live_appid IS NULL
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

export interface TestKeys {
	apikey: string;
	privatekeyHash: string;
}

/**
 * The layout of an app created now (issue 50 phase 2b-1): its projection rows in its owners' shards. Apps created
 * before keep "one" (migration 0049's default) until the upgrade moves them.
 */
export const NEW_APP_LAYOUT: Layout = "sharded";

/** Creates the app and its test twin (keys `test`) in one batch, with its audit entry. */
export async function insertApp(db: D1Database, app: NewApp, test: TestKeys, audit: AuditEntry): Promise<void> {
	const now = nowIso();
	const insert = db
		.prepare(
			`INSERT INTO apps (appid, name, apikey, privatekey_hash, webhook_secret, landingurl, webhookurl, emailsender, created_at, updated_at,
			   layout)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
			NEW_APP_LAYOUT,
		);
	await db.batch([insert, upsertTestApp(db, app.appid, test), auditStatement(db, audit)]);
}

/**
 * Creates the test twin of live app `appid` with `keys`, a copy of the live
 * app's settings (the columns every settings change writes to both, below)
 * and of its layout (a twin made later for an app still "one" is "one" too,
 * and moves with it), or gives an existing twin these keys. Nothing when `appid` is not a live app.
 */
function upsertTestApp(db: D1Database, appid: string, keys: TestKeys): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO apps (appid, live_appid, name, apikey, privatekey_hash, ${SHARED_COLUMNS.join(", ")}, created_at, updated_at, layout)
			 SELECT ?1 || '_test', ?1, name, ?2, ?3, ${SHARED_COLUMNS.join(", ")}, ?4, ?4, layout FROM apps WHERE appid = ?1 AND live_appid IS NULL
			 ON CONFLICT (appid) DO UPDATE SET apikey = excluded.apikey, privatekey_hash = excluded.privatekey_hash, updated_at = excluded.updated_at`,
		)
		.bind(appid, keys.apikey, keys.privatekeyHash, nowIso());
}

/** Creates or rotates the test keys of live app `appid`; false when there is no such live app. */
export async function saveTestKeys(db: D1Database, appid: string, keys: TestKeys, audit: AuditEntry): Promise<boolean> {
	const result = await runAudited(db, upsertTestApp(db, appid, keys), audit);
	return result.meta.changes > 0;
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
		| "logourl"
		| "accentcolor"
		| "privatekeyHash"
		| "webhookSecret"
		| "defaultCampaignId"
		| "requirePasskeys"
	>
>;

/**
 * The settings a test twin shares with its live app (docs/test-mode.md). The
 * twin keeps a copy, written in the same statement as the live row, so every
 * SQL that reads an app's settings by appid (webhook deliveries, share links)
 * reads the same values for both modes. The webhook secret is shared too: both
 * modes deliver to the one webhook URL, whose receiver verifies with one secret
 * and tells the modes apart by `livemode`.
 */
const SHARED_COLUMNS = [
	"webhook_secret",
	"landingurl",
	"webhookurl",
	"emailsender",
	"frameorigin",
	"timezone",
	"logourl",
	"accentcolor",
	"default_campaignid",
] as const;

const APP_COLUMNS: Record<keyof AppChanges, string> = {
	name: "name",
	landingurl: "landingurl",
	webhookurl: "webhookurl",
	emailsender: "emailsender",
	frameorigin: "frameorigin",
	timezone: "timezone",
	logourl: "logourl",
	accentcolor: "accentcolor",
	privatekeyHash: "privatekey_hash",
	webhookSecret: "webhook_secret",
	defaultCampaignId: "default_campaignid",
	requirePasskeys: "require_passkeys",
};

/** Applies the given changes with their audit entry; returns false when the app does not exist (nothing is recorded then). */
export async function updateApp(db: D1Database, appid: string, changes: AppChanges, audit: AuditEntry): Promise<boolean> {
	const entries = Object.entries(changes)
		.filter(([, v]) => v !== undefined)
		// SQLite has no booleans: a flag is stored as 0 or 1.
		.map(([k, v]) => [k, typeof v === "boolean" ? Number(v) : v]) as [keyof AppChanges, string | number | null][];
	const sets = entries.map(([key]) => `${APP_COLUMNS[key]} = ?`);
	// A default campaign must be one of the app's own: checked in the write itself, so nothing changes otherwise.
	// A settings change writes the live app and its test twin alike; a private key is each mode's own.
	const own = changes.privatekeyHash !== undefined;
	const rows = own ? "appid = ?" : "(appid = ? OR live_appid = ?)";
	const guard =
		changes.defaultCampaignId != null
			? " AND EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ? AND appid = COALESCE(apps.live_appid, apps.appid) AND archived_at IS NULL)"
			: "";
	const update = db
		.prepare(`UPDATE apps SET ${[...sets, "updated_at = ?"].join(", ")} WHERE ${rows}${guard}`)
		.bind(...entries.map(([, v]) => v), nowIso(), appid, ...(own ? [] : [appid]), ...(guard ? [changes.defaultCampaignId] : []));
	const result = await runAudited(db, update, audit);
	return result.meta.changes > 0;
}
