import { z } from "zod";
import { nowIso } from "../domain/dates";
import { ROLES, type Role } from "./admin-tokens";
import { type AuditEntry, auditStatement } from "./audit";
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
	active: z.number(),
});
export type Member = z.output<typeof memberRow>;

const MEMBER_SELECT = `SELECT m.memberid, m.appid, m.personid, p.email, m.role, m.created_at,
	(p.password_hash IS NOT NULL) AS active FROM members m JOIN people p ON p.personid = m.personid`;

export type NewMemberOutcome = { ok: true; member: Member } | { ok: false; reason: "member_exists" };

/**
 * Adds `email` to the app with `role` and records its invitation (`tokenHash`,
 * valid until `expiresAt` epoch ms). The person is created on their first
 * invitation and shared by every app they join.
 */
export async function insertMember(
	db: D1Database,
	input: { memberid: string; personid: string; appid: string; email: string; role: Role; tokenHash: string; expiresAt: number },
	audit: AuditEntry,
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

/** Removes a member with their open invitations and ends the person's dashboard sessions; false when there is no such member. */
export async function deleteMember(db: D1Database, appid: string, memberid: string, audit: AuditEntry): Promise<boolean> {
	const ofThisApp = "SELECT memberid FROM members WHERE memberid = ? AND appid = ?";
	const results = await db.batch([
		db.prepare(`DELETE FROM member_invitations WHERE memberid IN (${ofThisApp})`).bind(memberid, appid),
		db
			.prepare("DELETE FROM admin_sessions WHERE personid = (SELECT personid FROM members WHERE memberid = ? AND appid = ?)")
			.bind(memberid, appid),
		db.prepare("DELETE FROM members WHERE memberid = ? AND appid = ?").bind(memberid, appid),
		auditStatement(db, audit, { onlyIfChanged: true }),
	]);
	return (results[2]?.meta.changes ?? 0) > 0;
}

const accessRow = z.object({ memberid: z.string(), role: z.enum(ROLES), email: z.string() });

/** A person's membership of one app (the unique (appid, personid) index), or null. */
export async function membershipOf(db: D1Database, appid: string, personid: string): Promise<z.output<typeof accessRow> | null> {
	const row = await db
		.prepare(
			"SELECT m.memberid, m.role, p.email FROM members m JOIN people p ON p.personid = m.personid WHERE m.appid = ? AND m.personid = ?",
		)
		.bind(appid, personid)
		.first();
	return row ? accessRow.parse(row) : null;
}

const personAppRow = z.object({ appid: z.string(), name: z.string(), role: z.enum(ROLES) });

/** The apps a person is a member of, by name (members_person; a person is a member of few apps). */
export async function appsOfPerson(db: D1Database, personid: string): Promise<z.output<typeof personAppRow>[]> {
	const result = await db
		.prepare(
			"SELECT m.appid, a.name, m.role FROM members m JOIN apps a ON a.appid = m.appid WHERE m.personid = ? ORDER BY a.name LIMIT 500",
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
 * Uses the invitation (once: the first of two concurrent acceptances wins)
 * and, when `password` is given, sets the person's password, only if the
 * person has none yet (an invitation never replaces a password). True when
 * this call used it.
 */
export async function acceptInvitation(db: D1Database, tokenHash: string, now: number, password: PasswordRecord | null): Promise<boolean> {
	const statements = [
		db
			.prepare("UPDATE member_invitations SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?")
			.bind(new Date(now).toISOString(), tokenHash, now),
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
