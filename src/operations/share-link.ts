import { Hono } from "hono";
import { recordClick } from "../db/clicks";
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
	const { codeKnown, landingurl } = await recordClick(c.env.DB, { code, host, at: now, iphash, useragent });
	if (!landingurl) return c.text("Not found", 404);
	c.header("Cache-Control", "no-store");
	return c.redirect(landingRedirect(landingurl, codeKnown ? code : null), 302);
});
