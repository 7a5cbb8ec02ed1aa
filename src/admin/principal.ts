import type { Context } from "hono";
import type { Role } from "../db/admin-tokens";
import { type AuditActor, type AuditChanges, type AuditEntry, newAuditEntryId } from "../db/audit";
import { nowIso } from "../domain/dates";
import { ipHash, ipNetwork } from "../domain/ip";

/**
 * Who calls the admin API (docs/operators.md): the superuser (ADMIN_TOKEN),
 * an app-scoped token, or a member signed in to the dashboard. The auth
 * middleware (routes.ts) settles it once per request into the context
 * variables; handlers read it here to answer by role and to name the actor
 * of their audit entries.
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

/**
 * What the admin API keeps per request, in Hono's typed context variables (as
 * the dashboard keeps its session): the auth the middleware settled, and the
 * dashboard's signed-in person on its in-process requests.
 */
export interface AdminVariables {
	auth: RequestAuth | undefined;
	person: SignedInPerson | undefined;
	/** A ?mode=test request re-dispatched to the test twin's routes (test-mode.ts). */
	twin: boolean | undefined;
}
export type AdminEnv = { Bindings: Env; Variables: AdminVariables };
export type AdminContext = Context<AdminEnv>;

/** What an in-process caller hands to the admin routes it dispatches to (the dashboard; the test twin's re-dispatch). */
export interface Handoff {
	person?: SignedInPerson | undefined;
	/** Auth settled on the live app's path before a ?mode=test re-dispatch: not checked again. */
	auth?: RequestAuth | undefined;
}

/** Module-private: only code that imports this module's `handingOff` can make an env that carries a hand-off. */
const HANDOFF = Symbol("admin hand-off");
type HandoffBindings = Env & { readonly [HANDOFF]?: Handoff };

/**
 * `env` carrying a hand-off for one in-process dispatch: a request from HTTP
 * runs on the isolate's own env and can never carry one, so no HTTP client
 * can claim to be the dashboard. Derived, not copied (as instrument/d1-metrics.ts
 * withBindings), so the bindings stay the isolate's.
 */
export function handingOff(env: Env, handoff: Handoff): Env {
	return Object.create(env, { [HANDOFF]: { value: handoff, enumerable: false } }) as Env;
}

/** The hand-off of this request's env (none for a request from HTTP). */
export const handoffOf = (env: Env): Handoff => (env as HandoffBindings)[HANDOFF] ?? {};

/** The settled auth of a request that passed the middleware (the superuser for one that did not need it). */
export function authOf(c: AdminContext): RequestAuth {
	return c.var.auth ?? { actor: { type: "superuser", id: null, name: "superuser", iphash: null } };
}

/** The dashboard's origin on its in-process requests, else the request's own: for links the API gives out. */
export const callerOrigin = (c: AdminContext) => c.var.person?.origin ?? new URL(c.req.url).origin;

/** The HMAC of the client's network, as the fraud checks store it (domain/ip.ts); null without a key or an address. */
export async function clientIpHash(env: { IP_HASH_KEY?: string }, ip: string): Promise<string | null> {
	const network = ipNetwork(ip);
	return network && env.IP_HASH_KEY ? ipHash(env.IP_HASH_KEY, network) : null;
}

/** An audit entry of this request's actor, now. */
export function auditEntry(
	c: AdminContext,
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
