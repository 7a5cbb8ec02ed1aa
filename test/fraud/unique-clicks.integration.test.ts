import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clickCounterFor } from "../../src/clicks/click-counter";
import { ipHash, ipNetwork } from "../../src/domain/ip";
import { UNIQUE_CLICK_WINDOW_MS } from "../../src/fraud/clicks";
import { app as worker } from "../../src/http/app";
import { withBindings } from "../../src/instrument/d1-metrics";
import { d1DownFrom } from "../http/d1-down";
import { ADMIN_TOKEN, admin, createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";

// Issue 21, "honest clicks": every share-link request is redirected, but only
// a person's first click in 30 minutes counts; HEADs, unfurlers and known bots
// count zero; requests per client network are rate limited. Issue 33: a client
// is its network whatever its User-Agent, and the counting happens in the
// code's click counter (no D1 on the request path), rolled up into D1.

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SAFARI_IPHONE =
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";

const visit = (code: string, ip: string, agent: string, init: RequestInit = {}) =>
	request(`/r/${code}`, {
		redirect: "manual",
		...init,
		headers: { "cf-connecting-ip": ip, "user-agent": agent, ...(init.headers as Record<string, string> | undefined) },
	});

/** An app with one referrer; `counts()` reads the referrer's clicks and the app's clicks and requests of today. */
async function referrer() {
	const app = await createApp();
	const ref = (await app.api("register", { email: `ref-${crypto.randomUUID()}@example.com` })).body as {
		referralcode: string;
		userkey: string;
	};
	const counts = async () => {
		await flushClicks(ref.referralcode);
		const user = await admin("GET", `/apps/${app.appid}/users/${ref.userkey}`);
		const stats = await admin("GET", `/apps/${app.appid}/stats`);
		return {
			user: user.body.clicks.total as number,
			clicks: stats.body.totals.clicks as number,
			requests: stats.body.requests.total as number,
		};
	};
	return { app, code: ref.referralcode, counts };
}

/** Runs `attempt` again (with a new round number, so a new address) when it straddled a 10 s rate-limit window. */
async function inOneWindow<T>(attempt: (round: number) => Promise<T>): Promise<T> {
	for (let round = 0; ; round++) {
		const window = Math.floor(Date.now() / 10_000);
		const result = await attempt(round);
		if (Math.floor(Date.now() / 10_000) === window || round >= 2) return result;
	}
}

describe("unique clicks", () => {
	it("200 GET /r/<code> from one client count once (the ones over the rate limit are 429 and write nothing)", async () => {
		const { code, counts } = await referrer();
		const statuses: number[] = [];
		for (let i = 0; i < 200; i++) {
			const res = await visit(code, "203.0.113.10", CHROME);
			statuses.push(res.status);
			await res.body?.cancel();
		}
		const redirected = statuses.filter((s) => s === 302).length;
		expect(statuses.every((s) => s === 302 || s === 429)).toBe(true);
		expect(redirected).toBeGreaterThanOrEqual(60);
		expect(await counts()).toEqual({ user: 1, clicks: 1, requests: redirected });
		const log = await env.DB.prepare("SELECT COUNT(*) AS n FROM link_click_log WHERE referralcode = ?").bind(code).first<{ n: number }>();
		expect(log?.n).toBe(1);
	});

	it("a HEAD, link unfurlers (facebookexternalhit, Slackbot) and known bots are redirected but count zero", async () => {
		const { code, counts } = await referrer();
		const head = await visit(code, "203.0.113.20", CHROME, { method: "HEAD" });
		expect(head.status).toBe(302);
		expect(head.headers.get("location")).toContain(`referrercode=${code}`);
		for (const agent of [
			"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
			"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
			"Twitterbot/1.0",
			"WhatsApp/2.24.1.6 A",
			"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
			"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			"curl/8.5.0",
			"python-requests/2.32.3",
		]) {
			const res = await visit(code, "203.0.113.21", agent);
			expect(res.status, agent).toBe(302);
		}
		// A browser's prefetch of the link is not a visit either.
		expect((await visit(code, "203.0.113.22", CHROME, { headers: { "sec-purpose": "prefetch" } })).status).toBe(302);
		expect(await counts()).toEqual({ user: 0, clicks: 0, requests: 10 });
		// The person who then opens it counts.
		expect((await visit(code, "203.0.113.22", CHROME)).status).toBe(302);
		expect(await counts()).toEqual({ user: 1, clicks: 1, requests: 11 });
	});

	it("another network is another client, another browser is not; the same client counts again after 30 minutes", async () => {
		const { code, counts } = await referrer();
		await visit(code, "203.0.113.30", CHROME);
		await visit(code, "203.0.113.30", CHROME);
		// Another User-Agent from the same address is the same client.
		await visit(code, "203.0.113.30", SAFARI_IPHONE);
		await visit(code, "203.0.113.31", CHROME);
		// Two addresses of one IPv6 /64 are one network.
		await visit(code, "2001:db8:1:2::10", CHROME);
		await visit(code, "2001:db8:1:2::99", SAFARI_IPHONE);
		expect(await counts()).toEqual({ user: 3, clicks: 3, requests: 6 });

		// The counter's clock is the request's: 29 minutes later the repeat still counts nothing; past 30 minutes it counts again.
		const counter = clickCounterFor(env, code);
		const clientkey = await ipHash(env.IP_HASH_KEY, ipNetwork("203.0.113.30")!);
		const at = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
		const again = (minutes: number) =>
			counter.visit(
				{ code, host: "service.test", at: at(minutes), kind: "click", clientkey, iphash: clientkey, useragent: CHROME },
				UNIQUE_CLICK_WINDOW_MS,
			);
		// Read from the user's own days (every day it has clicks, tomorrow's included): a run after 23:29 UTC puts
		// these future clicks on tomorrow, which the app's stats (days up to today) do not show yet.
		await again(29);
		expect((await counts()).user).toBe(3);
		await again(31);
		await again(32);
		expect((await counts()).user).toBe(4);
	});

	it("one client sending 200 User-Agents counts one click", async () => {
		const { code, counts } = await referrer();
		// Straight to the code's counter, so all 200 are counted requests (over HTTP the rate limit answers the 61st with 429).
		const counter = clickCounterFor(env, code);
		const clientkey = await ipHash(env.IP_HASH_KEY, ipNetwork("203.0.113.77")!);
		for (let i = 0; i < 200; i++) {
			const at = new Date().toISOString();
			await counter.visit(
				{ code, host: "service.test", at, kind: "click", clientkey, iphash: clientkey, useragent: `${CHROME} #${i}` },
				UNIQUE_CLICK_WINDOW_MS,
			);
		}
		expect(await counts()).toEqual({ user: 1, clicks: 1, requests: 200 });
		const log = await env.DB.prepare("SELECT COUNT(*) AS n FROM link_click_log WHERE referralcode = ?").bind(code).first<{ n: number }>();
		expect(log?.n).toBe(1);
	});

	it("a click reaches no D1 on its request path: with the Worker's D1 down it is still redirected and counted", async () => {
		const { code, counts } = await referrer();
		const down = d1DownFrom(env.DB, 1);
		const res = await worker.fetch(
			new Request(`http://service.test/r/${code}`, { headers: { "cf-connecting-ip": "203.0.113.40", "user-agent": CHROME } }),
			withBindings(env, { DB: down.db }),
			createExecutionContext(),
		);
		expect(res.status).toBe(302);
		expect(down.calls).toBe(0);
		expect(await counts()).toEqual({ user: 1, clicks: 1, requests: 1 });
		// The counter's marks hold neither the address nor the user agent.
		const keys = await runInDurableObject(clickCounterFor(env, code), async (_object, state) => [...(await state.storage.list()).keys()]);
		const marks = keys.filter((k) => k.startsWith("m:") && k.includes(code));
		expect(marks).toHaveLength(1);
		expect(JSON.stringify(marks)).not.toContain("203.0.113.40");
		expect(JSON.stringify(marks)).not.toContain("Chrome");
	});
});

describe("analytics shows unique clicks and raw requests apart", () => {
	it("the stats answer and the dashboard's analytics page carry both", async () => {
		const { app, code, counts } = await referrer();
		for (const agent of [CHROME, CHROME, "Slackbot 1.0 (+https://api.slack.com/robots)"]) await visit(code, "203.0.113.60", agent);
		expect(await counts()).toEqual({ user: 1, clicks: 1, requests: 3 });
		const stats = await admin("GET", `/apps/${app.appid}/stats`);
		expect(stats.body.requests.days.at(-1)).toEqual({ day: new Date().toISOString().slice(0, 10), requests: 3 });
		expect(stats.body.requests.days).toHaveLength(stats.body.days.length);

		const login = await request("/dashboard/login");
		const loginCookie = login.headers.getSetCookie()[0]?.split(";")[0] ?? "";
		const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())?.[1] ?? "";
		const signedIn = await request("/dashboard/login", {
			method: "POST",
			redirect: "manual",
			headers: { cookie: loginCookie },
			body: new URLSearchParams({ _csrf: csrf, token: ADMIN_TOKEN }),
		});
		const cookie =
			signedIn.headers
				.getSetCookie()
				.find((c) => c.startsWith("dash_session="))
				?.split(";")[0] ?? "";
		const page = await (await request(`/dashboard/apps/${app.appid}/analytics`, { headers: { cookie } })).text();
		expect(page).toContain('Unique clicks<b data-testid="total-clicks">1</b>');
		expect(page).toContain('Link requests<b data-testid="total-requests">3</b>');
	});
});

describe("clicks per client network are rate limited (60 per 10 s)", () => {
	it("the 61st request from one network is 429 with Retry-After and counts nothing; another network is served", async () => {
		const { code, counts } = await referrer();
		const { statuses, last, before, after, again } = await inOneWindow(async (round) => {
			const seen: number[] = [];
			let res: Response | undefined;
			for (let i = 0; i < 61; i++) {
				// Different addresses of one /64, different browsers: still one network.
				res = await visit(code, `2001:db8:${round}:7::${i.toString(16)}`, `${CHROME} #${i}`);
				seen.push(res.status);
				if (i < 60) await res.body?.cancel();
			}
			const before = await counts();
			const again = (await visit(code, `2001:db8:${round}:7::1`, CHROME)).status;
			return { statuses: seen, last: res!, before, after: await counts(), again };
		});
		expect(statuses).toEqual([...Array(60).fill(302), 429]);
		expect(last.headers.get("retry-after")).toBe("10");
		expect(again).toBe(429);
		expect(after).toEqual(before);
		expect((await visit(code, "203.0.113.50", CHROME)).status).toBe(302);
	});
});
