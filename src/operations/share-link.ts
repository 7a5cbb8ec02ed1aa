import { Hono } from "hono";
import { clickCounterFor, type Visit } from "../clicks/click-counter";
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
 * (its network, whatever its User-Agent) within 30 minutes (fraud/clicks.ts,
 * docs/fraud.md). Requests per client network are rate limited. Counting is
 * the code's click counter's (clicks/click-counter.ts): nothing is written
 * to D1 on the request path.
 */
export const shareLinkRoutes = new Hono<{ Bindings: Env }>();

shareLinkRoutes.get("/:code", async (c) => {
	let code = c.req.param("code").toUpperCase();
	const host = new URL(c.req.url).host.toLowerCase();
	const network = ipNetwork(c.req.header("cf-connecting-ip") ?? "");
	// Over the per-network limit nothing is counted: a flood costs the counters nothing.
	if (!(await underClickLimit(c.env, network))) {
		return c.text("Too many requests", 429, { "Retry-After": String(CLICK_RETRY_AFTER_SECONDS), "Cache-Control": "no-store" });
	}
	// Without the secret the click is still counted and logged, just without its network.
	const iphash = network && c.env.IP_HASH_KEY ? await ipHash(c.env.IP_HASH_KEY, network) : null;
	// No D1 on the request path: the code's click counter knows where it leads and counts it (issue 33).
	const visit: Visit = {
		code,
		host,
		at: new Date().toISOString(),
		// A person's click is counted once per client and window; HEADs, prefetches and bots only as requests.
		kind: clickKind(c.req.method, c.req.raw.headers),
		clientkey: clientKey(iphash),
		iphash,
		useragent: c.req.header("user-agent")?.slice(0, 1000) ?? null,
	};
	let { codeKnown, landingurl: landing } = await clickCounterFor(c.env, code).visit(visit, UNIQUE_CLICK_WINDOW_MS);
	// A code replaced by a vanity code (an alias) leads where the user's code leads, counted under it by that
	// code's counter: one D1 read more, only for a code no live user has now (printed links never break).
	const current = codeKnown ? null : await currentCodeOf(c.env.DB, code);
	if (current) {
		code = current;
		({ codeKnown, landingurl: landing } = await clickCounterFor(c.env, code).visit({ ...visit, code }, UNIQUE_CLICK_WINDOW_MS));
	}
	if (!landing) return c.text("Not found", 404);
	c.header("Cache-Control", "no-store");
	return c.redirect(landingRedirect(landing, codeKnown ? code : null), 302);
});
