import { Hono } from "hono";
import { listDevMail } from "../db/dev-mail";
import { isLocalDevelopment } from "./admin-token";
import { errorBody } from "./errors";

/**
 * GET /dev/mail: the local mailbox (outbox/send-email.ts), newest first, as
 * JSON `{mail: [{to, subject, text, html, sentat}]}`. Local development only:
 * a deployed Worker answers 404 as for any unknown path, and keeps no mail.
 */
export const devMailRoutes = new Hono<{ Bindings: Env }>();

devMailRoutes.get("/dev/mail", async (c) => {
	if (!isLocalDevelopment(c.env)) return c.json(errorBody("not_found", "No route for GET /dev/mail."), 404);
	c.header("Cache-Control", "no-store");
	return c.json({ mail: await listDevMail(c.env.DB) });
});
