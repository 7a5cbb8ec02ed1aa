import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { app as worker } from "../../src/http/app";
import { ADMIN_TOKEN } from "../support/api";

// Issue 21: admin credentials cannot be guessed at speed, a deployment with a
// guessable token serves nothing, and a signed-out session stays out.

afterEach(() => {
	vi.restoreAllMocks();
});

const BASE = "http://service.test";

/** The Worker with `overrides` on the test env (another token, no ENVIRONMENT, ...). */
async function send(path: string, init: RequestInit = {}, overrides: Partial<Env> = {}): Promise<Response> {
	const ctx = createExecutionContext();
	const res = await worker.fetch(new Request(`${BASE}${path}`, { redirect: "manual", ...init }), { ...env, ...overrides } as Env, ctx);
	await waitOnExecutionContext(ctx);
	return res;
}

const bearer = (token: string, ip: string, overrides: Partial<Env> = {}) =>
	send("/admin/v1/apps", { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": ip } }, overrides);

const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0];
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

/** Posts the sign-in form (with its login cookie and CSRF token) from `ip`. */
async function signInForm(token: string, ip: string, overrides: Partial<Env> = {}): Promise<Response> {
	const login = await send("/dashboard/login", {}, overrides);
	const loginCookie = cookieOf(login, "dash_login") ?? "";
	return send(
		"/dashboard/login",
		{
			method: "POST",
			headers: { cookie: loginCookie, "cf-connecting-ip": ip },
			body: new URLSearchParams({ _csrf: csrfOf(await login.text()), token }),
		},
		overrides,
	);
}

/** Runs `attempt` again (with a new round number, so a new address) when it straddled a 10 s rate-limit window. */
async function inOneWindow<T>(attempt: (round: number) => Promise<T>): Promise<T> {
	for (let round = 0; ; round++) {
		const window = Math.floor(Date.now() / 10_000);
		const result = await attempt(round);
		if (Math.floor(Date.now() / 10_000) === window || round >= 2) return result;
	}
}

describe("failed admin sign-ins are limited per client IP (10 per 10 s)", () => {
	it("the 11th wrong bearer token is 429 with Retry-After, and the sign-in form from that address is refused too", async () => {
		const { statuses, last, form, rightToken } = await inOneWindow(async (round) => {
			const ip = `198.51.100.${10 + round}`;
			const seen: number[] = [];
			let res: Response | undefined;
			for (let i = 0; i < 11; i++) {
				res = await bearer(`guess-${i}`, ip);
				seen.push(res.status);
			}
			const last = { retryAfter: res!.headers.get("retry-after"), body: await res!.json() };
			// Over the limit, the address is refused before the token is compared: a right guess would not show.
			const rightToken = (await bearer(ADMIN_TOKEN, ip)).status;
			const form = await signInForm("another-guess", ip);
			return { statuses: seen, last, form, rightToken };
		});
		expect(statuses).toEqual([...Array(10).fill(401), 429]);
		expect(last.retryAfter).toBe("10");
		expect(last.body).toMatchObject({ success: false, errorcode: "rate_limited", retryafter: 10 });
		expect(rightToken).toBe(429);
		expect(form.status).toBe(429);
		expect(form.headers.get("retry-after")).toBe("10");
		expect(cookieOf(form, "dash_session")).toBeUndefined();
		// Another address is not limited, and the right token from it works.
		expect((await bearer("guess", "198.51.100.99")).status).toBe(401);
		expect((await bearer(ADMIN_TOKEN, "198.51.100.98")).status).toBe(200);
	});

	it("the 11th wrong token on the dashboard's sign-in form is 429 with Retry-After", async () => {
		const statuses = await inOneWindow(async (round) => {
			const ip = `198.51.100.${20 + round}`;
			const seen: { status: number; retryAfter: string | null; session?: string }[] = [];
			for (let i = 0; i < 11; i++) {
				const res = await signInForm(`guess-${i}`, ip);
				seen.push({ status: res.status, retryAfter: res.headers.get("retry-after"), session: cookieOf(res, "dash_session") });
			}
			const bearerAfter = (await bearer("guess", ip)).status;
			return { seen, bearerAfter };
		});
		expect(statuses.seen.map((s) => s.status)).toEqual([...Array(10).fill(401), 429]);
		expect(statuses.seen.at(-1)?.retryAfter).toBe("10");
		expect(statuses.seen.every((s) => s.session === undefined)).toBe(true);
		// One limit for both doors: the bearer API from that address is refused as well.
		expect(statuses.bearerAfter).toBe(429);
	});

	it("a mix of both doors counts together: 6 bearer and 5 form failures give the 429 on the 11th", async () => {
		const statuses = await inOneWindow(async (round) => {
			const ip = `198.51.100.${30 + round}`;
			const seen: number[] = [];
			for (let i = 0; i < 6; i++) seen.push((await bearer(`guess-${i}`, ip)).status);
			for (let i = 0; i < 5; i++) seen.push((await signInForm(`form-guess-${i}`, ip)).status);
			return seen;
		});
		expect(statuses).toEqual([...Array(10).fill(401), 429]);
	});
});

describe("a deployed Worker refuses a guessable admin token", () => {
	const deployed = { ENVIRONMENT: undefined } as unknown as Partial<Env>;

	it("answers 503 admin_token_insecure naming the fix on the admin API and the dashboard, and logs why", async () => {
		const errors = vi.spyOn(console, "error").mockImplementation(() => {});
		for (const token of ["test-admin-token", "dev-admin-token", "change-me", "x".repeat(31), ""]) {
			const overrides = { ...deployed, ADMIN_TOKEN: token };
			const api = await bearer(token, "192.0.2.1", overrides);
			expect(api.status, token).toBe(503);
			const body = (await api.json()) as { errorcode: string; message: string };
			expect(body.errorcode).toBe("admin_token_insecure");
			expect(body.message).toContain("wrangler secret put ADMIN_TOKEN");
			expect(body.message).toContain("32 characters");
			const page = await send("/dashboard/login", {}, overrides);
			expect(page.status, token).toBe(503);
			expect(await page.text()).toContain("wrangler secret put ADMIN_TOKEN");
			expect((await signInForm(token, "192.0.2.1", overrides)).status).toBe(503);
		}
		const logged = errors.mock.calls.map((args) => String(args[0]));
		expect(logged.some((line) => line.includes("insecure ADMIN_TOKEN") && line.includes("documented default"))).toBe(true);
		expect(logged.some((line) => line.includes("insecure ADMIN_TOKEN") && line.includes("31 characters"))).toBe(true);
	});

	it("serves a random token of 32 characters or more, and a short token where ENVIRONMENT=development", async () => {
		const strong = "k3V9q-Zt1sW8bX0mC4yR7uE2nH6aJ5dLp";
		expect(strong.length).toBeGreaterThanOrEqual(32);
		expect((await bearer(strong, "192.0.2.2", { ...deployed, ADMIN_TOKEN: strong })).status).toBe(200);
		expect((await bearer(ADMIN_TOKEN, "192.0.2.2", { ENVIRONMENT: "development" })).status).toBe(200);
	});
});

describe("dashboard sessions end on the server", () => {
	async function signedIn(overrides: Partial<Env> = {}) {
		const res = await signInForm((overrides.ADMIN_TOKEN as string | undefined) ?? ADMIN_TOKEN, "192.0.2.50", overrides);
		expect(res.status).toBe(303);
		const cookie = cookieOf(res, "dash_session") ?? "";
		const home = await send("/dashboard", { headers: { cookie } }, overrides);
		expect(home.status).toBe(200);
		return { cookie, csrf: csrfOf(await home.text()) };
	}

	it("a signed-out cookie is refused, even replayed by someone who copied it", async () => {
		const { cookie, csrf } = await signedIn();
		const out = await send("/dashboard/logout", { method: "POST", headers: { cookie }, body: new URLSearchParams({ _csrf: csrf }) });
		expect(out.status).toBe(303);
		const again = await send("/dashboard", { headers: { cookie } });
		expect(again.status).toBe(303);
		expect(again.headers.get("location")).toBe("/dashboard/login");
		const post = await send("/dashboard/apps/app_x", { method: "POST", headers: { cookie }, body: new URLSearchParams({ _csrf: csrf }) });
		expect(post.status).toBe(401);
		// Another session is not affected.
		const other = await signedIn();
		expect((await send("/dashboard", { headers: { cookie: other.cookie } })).status).toBe(200);
	});

	it("rotating ADMIN_TOKEN signs every session out", async () => {
		const first = { ADMIN_TOKEN: "first-token-for-the-rotation-test-0001" };
		const second = { ADMIN_TOKEN: "second-token-for-the-rotation-test-002" };
		const { cookie } = await signedIn(first);
		expect((await send("/dashboard", { headers: { cookie } }, first)).status).toBe(200);
		const after = await send("/dashboard", { headers: { cookie } }, second);
		expect(after.status).toBe(303);
		expect(after.headers.get("location")).toBe("/dashboard/login");
	});

	it("expired session rows are deleted by the every-minute job", async () => {
		const { cookie } = await signedIn();
		const [expiry] = cookie.replace("dash_session=", "").split(".");
		const { purgeExpiredAdminSessions } = await import("../../src/db/admin-sessions");
		const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM admin_sessions WHERE expires_at = ?")
			.bind(Number(expiry))
			.first<{ n: number }>();
		expect(before?.n).toBe(1);
		expect(await purgeExpiredAdminSessions(env.DB, Number(expiry) + 1)).toBeGreaterThanOrEqual(1);
		expect((await send("/dashboard", { headers: { cookie } })).status).toBe(303);
	});
});
