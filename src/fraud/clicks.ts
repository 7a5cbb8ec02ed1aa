import { createIsbotFromList, list } from "isbot";

/**
 * How a share-link request counts (docs/fraud.md, "How clicks are counted").
 * Every request is redirected; only a person's first visit in a while is a
 * click:
 *
 * - `HEAD` requests, browser prefetches and known bots (link unfurlers such as
 *   facebookexternalhit, Slackbot, Twitterbot, WhatsApp, Discordbot, crawlers,
 *   scripts such as curl or python-requests) are requests, not clicks.
 * - A repeat from the same client (IP network, whatever its user agent)
 *   within UNIQUE_CLICK_WINDOW_MS counts once (clicks/click-counter.ts).
 * - Requests per client network are rate limited (`CLICK_LIMITER`); over the
 *   limit the answer is 429 and nothing is written.
 */

export type ClickKind = "click" | "head" | "prefetch" | "bot";

/** A repeat from the same client within this time counts once. */
export const UNIQUE_CLICK_WINDOW_MS = 30 * 60_000;

/**
 * isbot's maintained list of bot user agents (about 200 patterns), without
 * its three shape heuristics: the patterns that call ANY bare
 * `product/version` agent a bot (they match "Example/1", which names no bot).
 * Named bots, unfurlers, crawlers, headless browsers and HTTP libraries
 * (curl, python-requests, Go, okhttp, Java...) stay; an unnamed bare agent
 * counts like any client: at most once per 30 minutes per network and
 * agent, under the per-network rate limit.
 */
const SHAPE_PROBES = ["Example/1", "Example/1.0"];
const isKnownBot = createIsbotFromList(list.filter((pattern) => !SHAPE_PROBES.some((probe) => new RegExp(pattern, "i").test(probe))));

/** Browsers announce speculative loads (link prefetch, prerender) with one of these. */
function isPrefetch(headers: Headers): boolean {
	const purpose = `${headers.get("sec-purpose") ?? ""} ${headers.get("purpose") ?? ""} ${headers.get("x-purpose") ?? ""}`;
	return /\b(prefetch|preview|prerender)\b/i.test(purpose);
}

/** What kind of request this is; only a `click` may count. */
export function clickKind(method: string, headers: Headers): ClickKind {
	if (method.toUpperCase() === "HEAD") return "head";
	if (isPrefetch(headers)) return "prefetch";
	if (isKnownBot(headers.get("user-agent") ?? "")) return "bot";
	return "click";
}

/**
 * The client a repeat is recognised by: its IP hash (the keyed HMAC of its
 * network, domain/ip.ts: an IPv4 address or an IPv6 /64), whatever
 * User-Agent it sends, since a client that changes its User-Agent is still
 * one client (issue 33: one address used to add 60 counted clicks per 10 s
 * that way). Null without an IP hash (no client IP, or no IP_HASH_KEY): such
 * a click cannot be matched to another and counts.
 */
export function clientKey(iphash: string | null): string | null {
	return iphash;
}

export interface ClickLimiters {
	CLICK_LIMITER?: RateLimit;
}

/** Seconds a client told 429 should wait: the limiter's window in wrangler.toml. */
export const CLICK_RETRY_AFTER_SECONDS = 10;

/**
 * True when this client network may make one more share-link request. Without
 * a network (no client IP) or a working limiter the request goes on: the
 * limit protects D1 from a flood, it must not take the links down.
 */
export async function underClickLimit(env: ClickLimiters, network: string | null): Promise<boolean> {
	if (!network || !env.CLICK_LIMITER) return true;
	try {
		return (await env.CLICK_LIMITER.limit({ key: `click:${network}` })).success;
	} catch (err) {
		console.error(JSON.stringify({ msg: "click rate limiter failed; request let through", error: String(err) }));
		return true;
	}
}
