import { nowIso } from "../domain/dates";

/**
 * Devices and networks a product reported for its users (table
 * user_identifiers), and the facts the fraud signals read from them.
 */

/** What a request said about the end user's device and network; `iphash` is already the keyed hash. */
export interface Network {
	deviceid?: string;
	iphash?: string;
	useragent?: string;
}

const entries = (network: Network) =>
	[
		["device", network.deviceid],
		["ip", network.iphash],
	].filter((e): e is [string, string] => typeof e[1] === "string" && e[1] !== "");

/**
 * Records the device id, IP hash and user agent of the user named by (app,
 * userkey), unless it was erased. `onlyIf` (SQL and args) gates the writes inside a batch, e.g. on
 * the guarded update or insert they accompany; a pair already known is ignored.
 */
export function networkWrites(
	db: D1Database,
	appid: string,
	userkey: string,
	network: Network,
	onlyIf: { sql: string; args: unknown[] } = { sql: "1", args: [] },
): D1PreparedStatement[] {
	const agent = network.useragent
		? [
				db
					.prepare(`UPDATE users SET useragent = ? WHERE appid = ? AND userkey = ? AND erased_at IS NULL AND ${onlyIf.sql}`)
					.bind(network.useragent, appid, userkey, ...onlyIf.args),
			]
		: [];
	return [
		...agent,
		...entries(network).map(([kind, value]) =>
			db
				.prepare(
					`INSERT INTO user_identifiers (appid, kind, value, userid, created_at)
				 SELECT ?, ?, ?, userid, ? FROM users WHERE appid = ? AND userkey = ? AND erased_at IS NULL AND ${onlyIf.sql}
				 ON CONFLICT DO NOTHING`,
				)
				.bind(appid, kind, value, nowIso(), appid, userkey, ...onlyIf.args),
		),
	];
}

/** Runs networkWrites on their own (one round trip; none when there is nothing to record). */
export async function recordNetwork(db: D1Database, appid: string, userkey: string, network: Network): Promise<void> {
	const writes = networkWrites(db, appid, userkey, network);
	if (writes.length > 0) await db.batch(writes);
}

/** `{ seen: 1 }` when a user of the app was already registered with this device id. */
export function deviceSeenLookup(db: D1Database, appid: string, deviceid: string | undefined): D1PreparedStatement {
	return db
		.prepare("SELECT EXISTS (SELECT 1 FROM user_identifiers WHERE appid = ? AND kind = 'device' AND value = ?) AS seen")
		.bind(appid, deviceid ?? null);
}

/**
 * Marks the new user existing when another user of the app holds its device
 * id. Batched right after the insert and before its own device row, so two
 * concurrent sign-ups on one new device cannot both pass as new.
 */
export function markExistingIfDeviceSeen(db: D1Database, appid: string, userkey: string, deviceid: string): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE users SET isexistinguser = 1 WHERE appid = ?1 AND userkey = ?2 AND isexistinguser = 0
			 AND EXISTS (SELECT 1 FROM user_identifiers WHERE appid = ?1 AND kind = 'device' AND value = ?3)`,
		)
		.bind(appid, userkey, deviceid);
}

/** `{ isexistinguser }` of a user, read back at the end of the registration batch. */
export function existingFlagLookup(db: D1Database, userkey: string): D1PreparedStatement {
	return db.prepare("SELECT isexistinguser FROM users WHERE userkey = ?").bind(userkey);
}
