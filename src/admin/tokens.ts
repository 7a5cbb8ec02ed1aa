import { Hono } from "hono";
import { z } from "zod";
import { insertAdminToken, listAdminTokens, ROLES, revokeAdminToken } from "../db/admin-tokens";
import { sha256Hex } from "../domain/crypto";
import { newAdminToken, newTokenId } from "../domain/ids";
import { ApiError } from "../http/errors";
import { requireAppId } from "./guard";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * App-scoped admin tokens (docs/operators.md): `POST` shows the token once
 * (only its SHA-256 is stored), `GET` lists them without secrets, `DELETE`
 * revokes at once. Who may call these is in rights.ts (owner).
 */
export const tokenRoutes = new Hono<AdminEnv>();

/** Names a reader of the audit log would take for a role or the superuser (any case): never a token's. */
export const RESERVED_TOKEN_NAMES: readonly string[] = ["superuser", ...ROLES];

export const createTokenSchema = z.object({
	name: z
		.string()
		.trim()
		.min(1, "is required")
		.max(100)
		.refine((name) => !RESERVED_TOKEN_NAMES.includes(name.toLowerCase()), {
			error: `must not be one of ${RESERVED_TOKEN_NAMES.join(", ")} (any case): the audit log names actors by them`,
		}),
	role: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }),
});

const view = (t: { tokenid: string; name: string; role: string; created_at: string; revoked_at: string | null }) => ({
	tokenid: t.tokenid,
	name: t.name,
	role: t.role,
	createdat: t.created_at,
	revokedat: t.revoked_at,
});

/** Registered by routes.ts with its body parser, so validation errors look like every other admin route's. */
export function registerTokenRoutes(parse: (request: Request) => Promise<z.output<typeof createTokenSchema>>) {
	tokenRoutes.post("/apps/:appid/tokens", async (c) => {
		const appid = c.req.param("appid");
		const input = await parse(c.req.raw);
		await requireAppId(c.env.DB, appid);
		const token = newAdminToken();
		const tokenid = newTokenId();
		const audit = auditEntry(c, appid, {
			action: "token.create",
			targetType: "token",
			targetId: tokenid,
			changes: { name: { before: null, after: input.name }, role: { before: null, after: input.role } },
		});
		const row = await insertAdminToken(c.env.DB, { tokenid, appid, ...input, tokenHash: await sha256Hex(token) }, audit);
		return c.json({ ...view(row), token }, 201);
	});

	tokenRoutes.get("/apps/:appid/tokens", async (c) => {
		const appid = c.req.param("appid");
		await requireAppId(c.env.DB, appid);
		return c.json({ tokens: (await listAdminTokens(c.env.DB, appid)).map(view) });
	});

	tokenRoutes.delete("/apps/:appid/tokens/:tokenid", async (c) => {
		const { appid, tokenid } = c.req.param();
		const audit = auditEntry(c, appid, { action: "token.revoke", targetType: "token", targetId: tokenid });
		if (!(await revokeAdminToken(c.env.DB, appid, tokenid, audit))) {
			throw new ApiError(404, "not_found", "No live token with that tokenid in this app.");
		}
		return c.json({ revoked: true });
	});
}
