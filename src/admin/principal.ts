import type { Context } from "hono";
import type { Role } from "../db/admin-tokens";
import { type AuditActor, type AuditChanges, type AuditEntry, newAuditEntryId } from "../db/audit";
import { nowIso } from "../domain/dates";
import { ipHash, ipNetwork } from "../domain/ip";

/**
 * Who calls the admin API (docs/operators.md): the superuser (ADMIN_TOKEN),
 * an app-scoped token, or a member signed in to the dashboard. The auth
 * middleware (routes.ts) settles it once per request; handlers read it here
 * to answer by role and to name the actor of their audit entries.
 */

/** A dashboard session's person (null: the superuser), handed to the in-process admin API by the dashboard (never by HTTP). */
export interface SignedInPerson {
	personid: string | null;
	/** The client's address as the dashboard saw it (its in-process request has none). */
	ip: string;
	/** The dashboard's origin, for links the API gives out (an invitation's URL). */
	origin: string;
}

/** What the middleware settled for a request. */
export interface RequestAuth {
	actor: AuditActor;
	/** The role for the route's app; undefined for the superuser, who has every right. */
	role?: Role;
}

const people = new WeakMap<Request, SignedInPerson>();
const settled = new WeakMap<Request, RequestAuth>();

/** Marks an in-process request of the dashboard as made by a signed-in person. */
export function actingAs(request: Request, person: SignedInPerson): Request {
	people.set(request, person);
	return request;
}

export const signedInPersonOf = (request: Request) => people.get(request);

export function settle(request: Request, auth: RequestAuth): void {
	settled.set(request, auth);
}

/** The request was authenticated already (a test-mode request re-dispatched to its twin, admin/test-mode.ts). */
export function isSettled(request: Request): boolean {
	return settled.has(request);
}

/** The settled auth of a request that passed the middleware (the superuser for one that did not need it). */
export function authOf(c: Context): RequestAuth {
	return settled.get(c.req.raw) ?? { actor: { type: "superuser", id: null, name: "superuser", iphash: null } };
}

/** The HMAC of the client's network, as the fraud checks store it (domain/ip.ts); null without a key or an address. */
export async function clientIpHash(env: { IP_HASH_KEY?: string }, ip: string): Promise<string | null> {
	const network = ipNetwork(ip);
	return network && env.IP_HASH_KEY ? ipHash(env.IP_HASH_KEY, network) : null;
}

/** An audit entry of this request's actor, now. */
export function auditEntry(
	c: Context,
	appid: string,
	what: { action: string; targetType: string; targetId: string | null; changes?: AuditChanges },
): AuditEntry {
	return {
		entryid: newAuditEntryId(),
		appid,
		at: nowIso(),
		actor: authOf(c).actor,
		action: what.action,
		targetType: what.targetType,
		targetId: what.targetId,
		changes: what.changes ?? {},
	};
}

/**
 * The fields of `after` whose value differs from `before`, as audit changes.
 * Values are compared as JSON; `secret` fields are recorded as changed without
 * their values.
 */
export function diff(before: Record<string, unknown>, after: Record<string, unknown>, secret: readonly string[] = []): AuditChanges {
	const changes: AuditChanges = {};
	for (const [key, value] of Object.entries(after)) {
		if (value === undefined) continue;
		const old = before[key] ?? null;
		if (JSON.stringify(old) === JSON.stringify(value)) continue;
		changes[key] = secret.includes(key) ? { before: "(secret)", after: "(secret)" } : { before: old, after: value };
	}
	return changes;
}
