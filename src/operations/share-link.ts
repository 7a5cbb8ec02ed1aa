import { Hono } from "hono";
import { clickCounter } from "../db/stats";
import { landingRedirect } from "../domain/share-url";

/**
 * Share links: `GET /r/<code>` counts a click (per code, per UTC day) and
 * redirects to the app's landing URL with `referrercode=<code>`.
 */
export const shareLinkRoutes = new Hono<{ Bindings: Env }>();

shareLinkRoutes.get("/:code", async (c) => {
	const code = c.req.param("code").toUpperCase();
	const day = new Date().toISOString().slice(0, 10);
	const host = new URL(c.req.url).host.toLowerCase();
	// One round trip: the code's app, the custom domain's app (for unknown codes), and the click counter.
	const [owner, domainApp] = await c.env.DB.batch<{ landingurl: string | null }>([
		c.env.DB.prepare("SELECT a.landingurl FROM users u JOIN apps a ON a.appid = u.appid WHERE u.referralcode = ?").bind(code),
		c.env.DB.prepare("SELECT a.landingurl FROM campaigns c JOIN apps a ON a.appid = c.appid WHERE c.customdomain = ? LIMIT 1").bind(host),
		c.env.DB.prepare(
			`INSERT INTO link_clicks (referralcode, day, clicks) SELECT ?1, ?2, 1 WHERE EXISTS (SELECT 1 FROM users WHERE referralcode = ?1)
			 ON CONFLICT (referralcode, day) DO UPDATE SET clicks = clicks + 1`,
		).bind(code, day),
		clickCounter(c.env.DB, code, day),
	]);
	const known = owner?.results[0];
	const landing = known?.landingurl ?? (known ? null : domainApp?.results[0]?.landingurl);
	if (!landing) return c.text("Not found", 404);
	c.header("Cache-Control", "no-store");
	return c.redirect(landingRedirect(landing, known ? code : null), 302);
});
