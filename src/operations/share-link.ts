import { Hono } from "hono";
import { recordLinkRequest } from "../db/clicks";
import { currentCodeOf } from "../db/users";
import { ipHash, ipNetwork } from "../domain/ip";
import { landingRedirect } from "../domain/share-url";
import { CLICK_RETRY_AFTER_SECONDS, clickKind, clientKey, UNIQUE_CLICK_WINDOW_MS, underClickLimit } from "../fraud/clicks";

/**
 * Share links: `GET /r/<code>` (and `HEAD`) redirects to the app's landing URL
 * with `referrercode=<code>`. Every request counts as a raw request of the
 * app; a person's click also counts as a unique click (per code, per UTC
 * day) and is logged with the clicker's IP hash and user agent (kept 30 days)
 * unless it is a HEAD, a prefetch, a known bot or a repeat of the same client
 * within 30 minutes (fraud/clicks.ts, docs/fraud.md). Requests per client
 * network are rate limited.
 */
export const shareLinkRoutes = new Hono<{ Bindings: Env }>();

shareLinkRoutes.get("/:code", async (c) => {
	let code = c.req.param("code").toUpperCase();
	const at = new Date();
	const host = new URL(c.req.url).host.toLowerCase();
	const network = ipNetwork(c.req.header("cf-connecting-ip") ?? "");
	// Over the per-network limit nothing is read or written: a flood costs D1 nothing.
	if (!(await underClickLimit(c.env, network))) {
		return c.text("Too many requests", 429, { "Retry-After": String(CLICK_RETRY_AFTER_SECONDS), "Cache-Control": "no-store" });
	}
	// Without the secret the click is still counted and logged, just without its network.
	const iphash = network && c.env.IP_HASH_KEY ? await ipHash(c.env.IP_HASH_KEY, network) : null;
	const useragent = c.req.header("user-agent")?.slice(0, 1000) ?? null;
	// A person's click is counted once per client and window; HEADs, prefetches and bots only as requests.
	const kind = clickKind(c.req.method, c.req.raw.headers);
	const click =
		kind === "click"
			? {
					iphash,
					useragent,
					mark: { clientkey: await clientKey(iphash, useragent ?? ""), token: crypto.randomUUID() },
					windowMs: UNIQUE_CLICK_WINDOW_MS,
				}
			: null;
	// One round trip: the code's app, the custom domain's app (for unknown codes), the raw request and the click.
	let { codeKnown, landingurl: landing } = await recordLinkRequest(c.env.DB, { code, host, at, click });
	// A code replaced by a vanity code (an alias) leads where the user's code leads, counted under it: one more
	// round trip, only for a code no live user has (the first batch wrote nothing for it).
	const current = codeKnown ? null : await currentCodeOf(c.env.DB, code);
	if (current) {
		({ codeKnown, landingurl: landing } = await recordLinkRequest(c.env.DB, { code: current, host, at, click }));
		code = current;
	}
	if (!landing) return c.text("Not found", 404);
	c.header("Cache-Control", "no-store");
	return c.redirect(landingRedirect(landing, codeKnown ? code : null), 302);
});
