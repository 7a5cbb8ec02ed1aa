import { z } from "zod";
import { randomString } from "../domain/ids";
import { rowsOf } from "./rows";
import { parseStoredJson } from "./stored-json";

/**
 * The audit log (migration 0016, docs/operators.md): who changed what, with
 * the fields' values before and after. An entry is only ever written as a
 * statement of the batch that makes its change (`auditStatement` is appended
 * to that batch), so a change without its entry cannot exist: if the entry
 * cannot be written, the batch, and with it the change, fails. Ledger changes
 * carry their entry in the ledger's own transaction and deliver it here
 * through the ledger outbox (`entryid` is unique, so a replay adds nothing).
 */

export const ACTOR_TYPES = ["superuser", "member", "token", "appkey"] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** Who made a change: `name` is what a reader recognizes (an email, a token's name, an apikey, "superuser"). */
export const auditActorSchema = z.object({
	type: z.enum(ACTOR_TYPES),
	id: z.string().nullable(),
	name: z.string(),
	/** HMAC of the client's network (domain/ip.ts); null when unknown. */
	iphash: z.string().nullable(),
});
export type AuditActor = z.output<typeof auditActorSchema>;

const changeSchema = z.object({ before: z.unknown(), after: z.unknown() });
export const auditChangesSchema = z.record(z.string(), changeSchema);
export type AuditChanges = z.output<typeof auditChangesSchema>;

/** One entry: who (`actor`), what (`action` on a target), the fields before and after, when (`at`, ISO). */
export const auditEntrySchema = z.object({
	entryid: z.string(),
	appid: z.string(),
	at: z.string(),
	actor: auditActorSchema,
	action: z.string(),
	targetType: z.string(),
	targetId: z.string().nullable(),
	changes: auditChangesSchema,
});
export type AuditEntry = z.output<typeof auditEntrySchema>;

/** Who asks for a ledger change, and the id its entries derive theirs from (ledger/audit.ts: one per reward). */
export const ledgerAuditSchema = z.object({ entryid: z.string(), actor: auditActorSchema });
export type LedgerAudit = z.output<typeof ledgerAuditSchema>;

export const newAuditEntryId = () => `aud_${randomString(24, "0123456789abcdefghijklmnopqrstuvwxyz")}`;

/**
 * The INSERT of `entry`. With `onlyIfChanged`, the entry is written only when
 * the statement just before it in the batch changed a row (SQLite's
 * `changes()`, per connection: a D1 batch runs its statements in order in one
 * transaction), so a guarded write that matched nothing records nothing.
 * With `targetIdSql`, the target's id is read by that SQL inside the batch
 * (an id the batch itself just created). A replayed entryid is ignored (the
 * SELECT's WHERE is always there: SQLite needs one before ON CONFLICT).
 */
export function auditStatement(
	db: Pick<D1Database, "prepare">,
	entry: AuditEntry,
	options: { onlyIfChanged?: boolean; targetIdSql?: { sql: string; args: unknown[] } } = {},
): D1PreparedStatement {
	const target = options.targetIdSql ? `(${options.targetIdSql.sql})` : "?";
	const targetArgs = options.targetIdSql ? options.targetIdSql.args : [entry.targetId];
	return db
		.prepare(
			`INSERT INTO audit_log (entryid, appid, at, actor_type, actor_id, actor, action, target_type, target_id, changes, iphash)
			 SELECT ?, ?, ?, ?, ?, ?, ?, ?, ${target}, ?, ? WHERE ${options.onlyIfChanged ? "changes() > 0" : "1"}
			 ON CONFLICT (entryid) DO NOTHING`,
		)
		.bind(
			entry.entryid,
			entry.appid,
			entry.at,
			entry.actor.type,
			entry.actor.id,
			entry.actor.name,
			entry.action,
			entry.targetType,
			...targetArgs,
			JSON.stringify(entry.changes),
			entry.actor.iphash,
		);
}

/** Writes one entry on its own: for a change made elsewhere (a ledger) or a read worth recording (an export). */
export async function recordAudit(db: D1Database, entry: AuditEntry): Promise<void> {
	await auditStatement(db, entry).run();
}

/** Runs `statement` and, when it changed a row, the entry of `audit`, in one batch; the statement's result. */
export async function runAudited(db: D1Database, statement: D1PreparedStatement, audit: AuditEntry): Promise<D1Result> {
	const [result] = await db.batch([statement, auditStatement(db, audit, { onlyIfChanged: true })]);
	if (!result) throw new Error("audited batch returned no result");
	return result;
}

const auditRow = z.object({
	seq: z.number(),
	entryid: z.string(),
	at: z.string(),
	actor_type: z.enum(ACTOR_TYPES),
	actor_id: z.string().nullable(),
	actor: z.string(),
	action: z.string(),
	target_type: z.string(),
	target_id: z.string().nullable(),
	changes: z.string(),
});

export interface AuditRecord {
	seq: number;
	entryid: string;
	at: string;
	actortype: ActorType;
	actorid: string | null;
	actor: string;
	action: string;
	targettype: string;
	targetid: string | null;
	changes: AuditChanges;
}

function record(raw: unknown): AuditRecord {
	const row = auditRow.parse(raw);
	return {
		seq: row.seq,
		entryid: row.entryid,
		at: row.at,
		actortype: row.actor_type,
		actorid: row.actor_id,
		actor: row.actor,
		action: row.action,
		targettype: row.target_type,
		targetid: row.target_id,
		changes: parseStoredJson("audit_log", "changes", row.changes, auditChangesSchema),
	};
}

export interface AuditFilter {
	appid: string;
	action?: string | null;
	actor?: string | null;
	target?: { type: string; id: string } | null;
	/** Entries older than this seq (the previous page's last). */
	before?: number | null;
	limit: number;
}

const COLUMNS = "seq, entryid, at, actor_type, actor_id, actor, action, target_type, target_id, changes";

/**
 * Newest first, one filter at a time on its own index (audit_app_action,
 * audit_app_actor, audit_app_target, else audit_app): a range of at most
 * `limit` rows of one app.
 */
export async function listAudit(db: D1Database, filter: AuditFilter): Promise<AuditRecord[]> {
	const where = ["appid = ?"];
	const args: unknown[] = [filter.appid];
	if (filter.action) {
		where.push("action = ?");
		args.push(filter.action);
	}
	if (filter.actor) {
		where.push("actor = ?");
		args.push(filter.actor);
	}
	if (filter.target) {
		where.push("target_type = ? AND target_id = ?");
		args.push(filter.target.type, filter.target.id);
	}
	if (filter.before != null) {
		where.push("seq < ?");
		args.push(filter.before);
	}
	const result = await db
		.prepare(`SELECT ${COLUMNS} FROM audit_log WHERE ${where.join(" AND ")} ORDER BY seq DESC LIMIT ?`)
		.bind(...args, filter.limit)
		.all();
	return rowsOf<unknown>(result).map(record);
}

/** How long audit entries are kept: two years, the span auditors of payment records commonly ask for. */
export const AUDIT_RETENTION_DAYS = 730;

/** Deletes entries older than `before` (ISO), at most `limit`, oldest first through audit_at. Returns how many. */
export async function purgeOldAudit(db: D1Database, before: string, limit: number): Promise<number> {
	const result = await db
		.prepare("DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)")
		.bind(before, limit)
		.run();
	return result.meta.changes;
}
