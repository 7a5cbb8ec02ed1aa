import { z } from "zod";
import { type Person, redactJson } from "../privacy/redact";
import { bySeqOfFriend, RULES } from "./by-friend";
import { type FriendRecord, rememberFriends } from "./friends";
import { Refused } from "./refused";
import type { LedgerOutboxEntry } from "./schema";
import type { LedgerWriter } from "./writer";

/** When this ledger's own user was erased (ISO, in `meta`), or null. */
export function erasedAt(sql: SqlStorage): string | null {
	return sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'erased_at'").toArray()[0]?.value ?? null;
}

/**
 * Erasure is final (docs/fraud.md): a change asked for an erased user
 * (redemption, status change, grant) is refused by its ledger itself, so a
 * call that passed the Worker's check just before the erasure is refused too.
 */
export function refuseIfErased(sql: SqlStorage): void {
	if (erasedAt(sql) !== null) throw new Refused({ code: "user_erased", message: "the user was erased" });
}

/**
 * Erasure inside one ledger (run in one storage transaction): the personal
 * fields copied from a person onto rewards (the friend snapshot) are
 * cleared, and webhooks still waiting in the ledger's outbox (their own
 * entries, or inside a projection entry) lose the
 * person's values. In the person's own ledger (`own`), the erasure is
 * recorded, and from then on the ledger refuses changes (refuseIfErased).
 * Amounts, statuses and versions are untouched, so every balance stays
 * exact. Idempotent.
 */
export function erasePersonInLedger(
	sql: SqlStorage,
	personUserkey: string,
	values: string[],
	own: { at: string } | null,
	/** The person as this ledger's user's friend (its referrer's ledger): its row loses its shown fields for good (friends.ts). */
	asFriend?: FriendRecord,
): { rewards: number; webhooks: number } {
	if (asFriend) rememberFriends(sql, [asFriend], "erased");
	if (own) {
		sql.exec("INSERT INTO meta (key, value) VALUES ('erased_at', ?) ON CONFLICT (key) DO NOTHING", own.at);
		// The profile a conversion reads (profile.ts) keeps nothing of the person: a later read answers it erased.
		sql.exec("UPDATE profile SET body = NULL, generation = generation + 1");
	}
	const copied = "(friend_email IS NOT NULL OR friend_name IS NOT NULL OR friend_profileimage IS NOT NULL)";
	// The rewards naming the person as their friend, sought by rule and friend (by-friend.ts, ledger schema step 16).
	const naming = `WITH RECURSIVE ${RULES} UPDATE rewards SET friend_email = NULL, friend_name = NULL, friend_profileimage = NULL
		 WHERE seq IN (${bySeqOfFriend("?1")}) AND ${copied}`;
	// Another user's rewards name the person as their friend only on Referrer rewards.
	let rewards = sql.exec(`${naming} AND usertype = 'Referrer'`, personUserkey).rowsWritten;
	// The person's own Friend rewards (each names the person as its friend).
	if (own) rewards += sql.exec(`${naming} AND usertype = 'Friend'`, personUserkey).rowsWritten;
	let webhooks = 0;
	for (const entry of sql
		// The conversion.recorded events that travel inside projection entries (outbox-queue.ts, queueProjection) too.
		.exec<Pick<LedgerOutboxEntry, "ref" | "payload">>(
			"SELECT ref, payload FROM outbox WHERE kind = 'webhook' OR (kind = 'projection' AND payload ->> '$.event' IS NOT NULL)",
		)
		.toArray()) {
		const redacted = redactKeepingCarried(entry.payload, { userkey: personUserkey, values });
		if (redacted === null) continue;
		sql.exec("UPDATE outbox SET payload = ? WHERE ref = ?", redacted, entry.ref);
		webhooks++;
	}
	return { rewards, webhooks };
}

/**
 * An entry's payload redacted, except the other ledger's records riding in it (`carried`, carried-records.ts): they
 * are that ledger's projected rows, which hold no personal field (ledger/projection-message.ts, projectedRow), as
 * that ledger's own entry would have sent them, so an erasure leaves them as it leaves that ledger's rows.
 */
function redactKeepingCarried(payload: string, person: Person): string | null {
	const { carried, ...rest } = payloadObject.parse(JSON.parse(payload));
	if (carried === undefined) return redactJson(payload, person);
	const redacted = redactJson(JSON.stringify(rest), person);
	return redacted === null ? null : JSON.stringify({ ...payloadObject.parse(JSON.parse(redacted)), carried });
}
const payloadObject = z.record(z.string(), z.unknown());

/**
 * Erases a ledger whole, alarm included: DELETE .../testdata (docs/test-mode.md). Refused (false) unless the ledger
 * is a test twin's, whose appid ends in `_test`: a live ledger is never erased this way.
 */
export async function eraseTestLedger(storage: DurableObjectStorage, writer: LedgerWriter, appid: string): Promise<boolean> {
	if (!appid.endsWith("_test")) return false;
	await storage.deleteAlarm();
	await storage.deleteAll();
	writer.forgetSchema();
	return true;
}
