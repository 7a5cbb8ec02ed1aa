import { Hono } from "hono";
import { z } from "zod";
import { ROLES } from "../db/admin-tokens";
import { deleteMember, findMember, insertMember, listMembers, type Member, updateMemberRole } from "../db/members";
import { sha256Hex } from "../domain/crypto";
import { randomString } from "../domain/ids";
import { PUBLIC_ORIGIN_UNSET, publicOrigin } from "../domain/public-origin";
import { ApiError } from "../http/errors";
import { brandOf } from "../outbox/branded";
import { invitationEmail } from "../outbox/emails";
import { emailEvent, sendOutboxEvents } from "../outbox/events";
import { body } from "./body";
import { requireApp, requireAppId } from "./guard";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * Members of an app (docs/operators.md): an owner adds a person by email with
 * a role; the invitation (valid 7 days, one use) is emailed to that address
 * and never answered to the inviter, and the membership gives nothing until
 * it is accepted. The answers are the same whether or not the person exists
 * or belongs to other apps. Who may call these is in rights.ts (owner).
 */
export const memberRoutes = new Hono<AdminEnv>();

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const ALNUM = "0123456789abcdefghijklmnopqrstuvwxyz";
const roleField = z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` });

export const createMemberSchema = z.object({
	email: z
		.string()
		.trim()
		.toLowerCase()
		.pipe(z.email({ error: "must be an email address" }).max(254)),
	role: roleField,
});
export const updateMemberSchema = z.object({ role: roleField });

export type MemberState = "invited" | "accepted" | "expired";

/** Where the membership stands: accepted (its own invitation was), or invited until the invitation expires. */
export function memberState(m: Pick<Member, "accepted_at" | "invitation_expires_at">, now = Date.now()): MemberState {
	if (m.accepted_at) return "accepted";
	return (m.invitation_expires_at ?? 0) > now ? "invited" : "expired";
}

const view = (m: Member) => ({
	memberid: m.memberid,
	email: m.email,
	role: m.role,
	state: memberState(m),
	createdat: m.created_at,
	acceptedat: m.accepted_at,
	passkeys: m.passkeys,
});

const memberNotFound = () => new ApiError(404, "not_found", "No member with that memberid in this app.");

memberRoutes.post("/apps/:appid/members", async (c) => {
	const appid = c.req.param("appid");
	const input = await body(c.req.raw, createMemberSchema);
	const token = `inv_${randomString(43, ALNUM)}`;
	const memberid = `mem_${randomString(16, ALNUM)}`;
	const audit = auditEntry(c, appid, {
		action: "member.add",
		targetType: "member",
		targetId: memberid,
		changes: { email: { before: null, after: input.email }, role: { before: null, after: input.role } },
	});
	const app = await requireApp(c.env.DB, appid);
	const expiresAt = Date.now() + INVITATION_TTL_MS;
	// The deployment's public origin, never the request's Host (issue 47): the link goes to someone else's inbox.
	const origin = publicOrigin(c.env);
	if (!origin) throw new ApiError(503, "public_origin_unset", PUBLIC_ORIGIN_UNSET);
	const url = `${origin}/dashboard/invitations/${token}`;
	const mail = emailEvent(
		appid,
		"email.invitation",
		invitationEmail({
			to: input.email,
			appname: app.name,
			role: input.role,
			url,
			expiresAt,
			brand: brandOf(app, c.env),
		}),
		app.livemode,
	);
	const row = { ...input, appid, memberid, personid: `per_${randomString(16, ALNUM)}`, tokenHash: await sha256Hex(token), expiresAt };
	const outcome = await insertMember(c.env.DB, row, audit, mail);
	if (!outcome.ok) throw new ApiError(409, "member_exists", `${input.email} is already a member of this app.`, { fields: ["email"] });
	// Recorded with the member: a failed send is left to the outbox sweep.
	c.executionCtx.waitUntil(
		sendOutboxEvents(c.env, [mail]).catch((err) =>
			console.error(JSON.stringify({ msg: "invitation email: enqueue failed, left to the outbox sweep", error: String(err) })),
		),
	);
	return c.json(view(outcome.member), 201);
});

memberRoutes.get("/apps/:appid/members", async (c) => {
	const appid = c.req.param("appid");
	await requireAppId(c.env.DB, appid);
	return c.json({ members: (await listMembers(c.env.DB, appid)).map(view) });
});

memberRoutes.patch("/apps/:appid/members/:memberid", async (c) => {
	const { appid, memberid } = c.req.param();
	const { role } = await body(c.req.raw, updateMemberSchema);
	const before = await findMember(c.env.DB, appid, memberid);
	if (!before) throw memberNotFound();
	const audit = auditEntry(c, appid, {
		action: "member.role",
		targetType: "member",
		targetId: memberid,
		changes: { email: { before: before.email, after: before.email }, role: { before: before.role, after: role } },
	});
	if (!(await updateMemberRole(c.env.DB, appid, memberid, role, audit))) throw memberNotFound();
	return c.json(view({ ...before, role }));
});

memberRoutes.delete("/apps/:appid/members/:memberid", async (c) => {
	const { appid, memberid } = c.req.param();
	const before = await findMember(c.env.DB, appid, memberid);
	if (!before) throw memberNotFound();
	const audit = auditEntry(c, appid, {
		action: "member.remove",
		targetType: "member",
		targetId: memberid,
		changes: { email: { before: before.email, after: null }, role: { before: before.role, after: null } },
	});
	if (!(await deleteMember(c.env.DB, appid, memberid, audit))) throw memberNotFound();
	return c.json({ removed: true });
});
