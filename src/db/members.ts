import { z } from "zod";
import { nowIso } from "../domain/dates";
import type { OutboxEvent } from "../domain/outbox-event";
import { ROLES, type Role } from "./admin-tokens";
import { type AuditEntry, auditStatement } from "./audit";
import { insertOutboxEvent } from "./outbox-events";
import { firstRowOf, rowsOf } from "./rows";

/**
 * Members of apps (migration 0016): a person (one email, one password) is a
 * member of one or more apps with a role in each. Every change is written in
 * one batch with its audit entry (db/audit.ts).
 */

const memberRow = z.object({
	memberid: z.string(),
	appid: z.string(),
	personid: z.string(),
	email: z.string(),
	role: z.enum(ROLES),
	created_at: z.string(),
	accepted_at: z.string().nullable(),
	/** The latest invitation's expiry (epoch ms); null when it has none. */
	invitation_expires_at: z.number().nullable(),
	/** How many passkeys the person has; 0 until the membership is accepted (nothing of a person shows before). */
	passkeys: z.number(),
});
export type Member = z.output<typeof memberRow>;

// Only the member's own facts: nothing here tells whether the person has a password or other apps.
const MEMBER_SELECT = `SELECT m.memberid, m.appid, m.personid, p.email, m.role, m.created_at, m.accepted_at,
	(SELECT MAX(i.expires_at) FROM member_invitations i WHERE i.memberid = m.memberid) AS invitation_expires_at,
	CASE WHEN m.accepted_at IS NULL THEN 0 ELSE (SELECT COUNT(*) FROM passkeys k WHERE k.personid = m.personid) END AS passkeys
	FROM members m JOIN people p ON p.personid = m.personid`;

export type NewMemberOutcome = { ok: true; member: Member } | { ok: false; reason: "member_exists" };

/**
 * Adds `email` to the app with `role`, records its invitation (`tokenHash`,
 * valid until `expiresAt` epoch ms) and the invitation's email (`mail`, an
 * outbox event: the link goes to the address only), in one batch. The person
 * is created on their first invitation and shared by every app they join;
 * the membership gives nothing until its own invitation is accepted.
 */
export async function insertMember(
	db: D1Database,
	input: { memberid: string; personid: string; appid: string; email: string; role: Role; tokenHash: string; expiresAt: number },
	audit: AuditEntry,
	mail: OutboxEvent,
): Promise<NewMemberOutcome> {
	const now = nowIso();
	const results = await db.batch([
		db
			.prepare("INSERT INTO people (personid, email, created_at) VALUES (?, ?, ?) ON CONFLICT (email) DO NOTHING")
			.bind(input.personid, input.email, now),
		db
			.prepare(
				`INSERT INTO members (memberid, appid, personid, role, created_at, updated_at)
				 SELECT ?, ?, personid, ?, ?, ? FROM people WHERE email = ? ON CONFLICT (appid, personid) DO NOTHING`,
			)
			.bind(input.memberid, input.appid, input.role, now, now, input.email),
		// Only a member just added gets an invitation and an entry: `changes()` is the insert's just above.
		auditStatement(db, audit, { onlyIfChanged: true }),
		db
			.prepare("INSERT INTO member_invitations (token_hash, memberid, expires_at) SELECT ?, memberid, ? FROM members WHERE memberid = ?")
			.bind(input.tokenHash, input.expiresAt, input.memberid),
		insertOutboxEvent(db, mail, { sql: "EXISTS (SELECT 1 FROM member_invitations WHERE token_hash = ?)", args: [input.tokenHash] }),
		db.prepare(`${MEMBER_SELECT} WHERE m.memberid = ?`).bind(input.memberid),
	]);
	const member = firstRowOf<unknown>(results.at(-1));
	return member ? { ok: true, member: memberRow.parse(member) } : { ok: false, reason: "member_exists" };
}

/** The app's members, oldest first (a range of members_app). */
export async function listMembers(db: D1Database, appid: string, limit = 200): Promise<Member[]> {
	const result = await db.prepare(`${MEMBER_SELECT} WHERE m.appid = ? ORDER BY m.created_at LIMIT ?`).bind(appid, limit).all();
	return rowsOf<unknown>(result).map((row) => memberRow.parse(row));
}

export async function findMember(db: D1Database, appid: string, memberid: string): Promise<Member | null> {
	const row = await db.prepare(`${MEMBER_SELECT} WHERE m.memberid = ? AND m.appid = ?`).bind(memberid, appid).first();
	return row ? memberRow.parse(row) : null;
}

/** Changes a member's role; false when the app has no such member. */
export async function updateMemberRole(db: D1Database, appid: string, memberid: string, role: Role, audit: AuditEntry): Promise<boolean> {
	const [updated] = await db.batch([
		db.prepare("UPDATE members SET role = ?, updated_at = ? WHERE memberid = ? AND appid = ?").bind(role, nowIso(), memberid, appid),
		auditStatement(db, audit, { onlyIfChanged: true }),
	]);
	return (updated?.meta.changes ?? 0) > 0;
}

/**
 * Removes a member with their invitations; false when there is no such
 * member. The person's sessions stay: every request checks the membership
 * of the app it names (admin/rights.ts), so they end in this app at once and
 * go on in the person's other apps, which this app's owner has no say over.
 */
export async function deleteMember(db: D1Database, appid: string, memberid: string, audit: AuditEntry): Promise<boolean> {
	const ofThisApp = "SELECT memberid FROM members WHERE memberid = ? AND appid = ?";
	const results = await db.batch([
		db.prepare(`DELETE FROM member_invitations WHERE memberid IN (${ofThisApp})`).bind(memberid, appid),
		db.prepare("DELETE FROM members WHERE memberid = ? AND appid = ?").bind(memberid, appid),
		auditStatement(db, audit, { onlyIfChanged: true }),
	]);
	return (results[1]?.meta.changes ?? 0) > 0;
}

const accessRow = z.object({ memberid: z.string(), role: z.enum(ROLES), email: z.string() });

/** A person's accepted membership of one app (the unique (appid, personid) index), or null. */
export async function membershipOf(db: D1Database, appid: string, personid: string): Promise<z.output<typeof accessRow> | null> {
	const row = await db
		.prepare(
			`SELECT m.memberid, m.role, p.email FROM members m JOIN people p ON p.personid = m.personid
			 WHERE m.appid = ? AND m.personid = ? AND m.accepted_at IS NOT NULL`,
		)
		.bind(appid, personid)
		.first();
	return row ? accessRow.parse(row) : null;
}

const personAppRow = z.object({ appid: z.string(), name: z.string(), role: z.enum(ROLES) });

/** The apps a person is an accepted member of, by name (members_person; a person is a member of few apps). */
export async function appsOfPerson(db: D1Database, personid: string): Promise<z.output<typeof personAppRow>[]> {
	const result = await db
		.prepare(
			`SELECT m.appid, a.name, m.role FROM members m JOIN apps a ON a.appid = m.appid
			 WHERE m.personid = ? AND m.accepted_at IS NOT NULL ORDER BY a.name LIMIT 500`,
		)
		.bind(personid)
		.all();
	return rowsOf<unknown>(result).map((row) => personAppRow.parse(row));
}

const personRow = z.object({
	personid: z.string(),
	email: z.string(),
	password_hash: z.string().nullable(),
	password_salt: z.string().nullable(),
	password_iterations: z.number().nullable(),
});
export type Person = z.output<typeof personRow>;

export async function findPersonByEmail(db: D1Database, email: string): Promise<Person | null> {
	const row = await db
		.prepare("SELECT personid, email, password_hash, password_salt, password_iterations FROM people WHERE email = ?")
		.bind(email)
		.first();
	return row ? personRow.parse(row) : null;
}

/** The person with this id (primary key), or null. */
export async function findPersonById(db: D1Database, personid: string): Promise<Person | null> {
	const row = await db
		.prepare("SELECT personid, email, password_hash, password_salt, password_iterations FROM people WHERE personid = ?")
		.bind(personid)
		.first();
	return row ? personRow.parse(row) : null;
}

const invitationRow = personRow.extend({ memberid: z.string(), appid: z.string(), appname: z.string() });
export type Invitation = z.output<typeof invitationRow>;

/** The open invitation with this token hash (unused, not expired at `now` epoch ms), with its person and app. */
export async function findInvitation(db: D1Database, tokenHash: string, now: number): Promise<Invitation | null> {
	const row = await db
		.prepare(
			`SELECT p.personid, p.email, p.password_hash, p.password_salt, p.password_iterations, m.memberid, m.appid, a.name AS appname
			 FROM member_invitations i JOIN members m ON m.memberid = i.memberid JOIN people p ON p.personid = m.personid
			 JOIN apps a ON a.appid = m.appid
			 WHERE i.token_hash = ? AND i.used_at IS NULL AND i.expires_at > ?`,
		)
		.bind(tokenHash, now)
		.first();
	return row ? invitationRow.parse(row) : null;
}

export interface PasswordRecord {
	hash: string;
	salt: string;
	iterations: number;
}

/**
 * Uses the invitation (once: the first of two concurrent acceptances wins),
 * starts its membership, and, when `password` is given, sets the person's
 * password, only if the person has none yet (an invitation never replaces a
 * password). True when this call used it.
 */
export async function acceptInvitation(db: D1Database, tokenHash: string, now: number, password: PasswordRecord | null): Promise<boolean> {
	const at = new Date(now).toISOString();
	const memberOfToken = "SELECT memberid FROM member_invitations WHERE token_hash = ?";
	const statements = [
		db
			.prepare("UPDATE member_invitations SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?")
			.bind(at, tokenHash, now),
		// `changes()` is the statement's just above: only the call that used the invitation goes on.
		db
			.prepare(
				`UPDATE members SET accepted_at = ?, updated_at = ? WHERE changes() > 0 AND accepted_at IS NULL AND memberid = (${memberOfToken})`,
			)
			.bind(at, at, tokenHash),
	];
	if (password) {
		statements.push(
			db
				.prepare(
					`UPDATE people SET password_hash = ?, password_salt = ?, password_iterations = ?
					 WHERE changes() > 0 AND password_hash IS NULL
					   AND personid = (SELECT m.personid FROM member_invitations i JOIN members m ON m.memberid = i.memberid WHERE i.token_hash = ?)`,
				)
				.bind(password.hash, password.salt, password.iterations, tokenHash),
		);
	}
	const [used] = await db.batch(statements);
	return (used?.meta.changes ?? 0) > 0;
}
