import { Hono } from "hono";
import { codeOwnerLookup, countClick, logClick } from "../db/clicks";
import { clickCounter } from "../db/stats";
import { ipHash, ipNetwork } from "../domain/ip";
import { landingRedirect } from "../domain/share-url";

/**
 * Share links: `GET /r/<code>` counts a click (per code, per UTC day) and
 * redirects to the app's landing URL with `referrercode=<code>`. Each click
 * is also logged with the clicker's IP hash and user agent (kept 30 days).
 */
export const shareLinkRoutes = new Hono<{ Bindings: Env }>();

shareLinkRoutes.get("/:code", async (c) => {
	const code = c.req.param("code").toUpperCase();
	const now = new Date().toISOString();
	const host = new URL(c.req.url).host.toLowerCase();
	const network = ipNetwork(c.req.header("cf-connecting-ip") ?? "");
	// Without the secret the click is still counted and logged, just without its network.
	const iphash = network && c.env.IP_HASH_KEY ? await ipHash(c.env.IP_HASH_KEY, network) : null;
	const useragent = c.req.header("user-agent")?.slice(0, 1000) ?? null;
	// One round trip: the code's app, the custom domain's app (for unknown codes), the click counter and log.
	const [owner, domainApp] = await c.env.DB.batch<{ landingurl: string | null }>([
		codeOwnerLookup(c.env.DB, code),
		c.env.DB.prepare("SELECT a.landingurl FROM campaigns c JOIN apps a ON a.appid = c.appid WHERE c.customdomain = ? LIMIT 1").bind(host),
		countClick(c.env.DB, code, now.slice(0, 10)),
		clickCounter(c.env.DB, code, now.slice(0, 10)),
		logClick(c.env.DB, code, now, iphash, useragent),
	]);
	const known = owner?.results[0];
	const landing = known?.landingurl ?? (known ? null : domainApp?.results[0]?.landingurl);
	if (!landing) return c.text("Not found", 404);
	c.header("Cache-Control", "no-store");
	return c.redirect(landingRedirect(landing, known ? code : null), 302);
});
