import { roleAtLeast } from "../admin/rights";
import type { Role } from "../db/admin-tokens";
import { membershipOf } from "../db/members";
import type { DashContext } from "./context";

/**
 * The signed-in person's role in an app, so a page shows only the actions it
 * allows (docs/operators.md); the admin API enforces the same rights either
 * way. The superuser has every right; a member's role is one indexed read.
 */
export async function roleIn(c: DashContext, appid: string): Promise<Role> {
	const { personid } = c.var.session;
	if (!personid) return "owner";
	return (await membershipOf(c.env.DB, appid, personid))?.role ?? "viewer";
}

export const mayAct = (role: Role, needed: Role) => roleAtLeast(role, needed);

/** What a page shows instead of an action the role does not allow. */
export const READ_ONLY_NOTE = "Your role in this app reads only here; an owner can change it on the Team page.";
