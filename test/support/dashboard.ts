import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { ADMIN_TOKEN, type createApp } from "./api";

/** Dashboard helpers for workerd tests: sign in through the form, GET and POST pages with the session cookie. */

export const BASE = "http://service.test";
export type TestApp = Awaited<ReturnType<typeof createApp>>;

export const fetchPage = (path: string, init: RequestInit = {}) =>
	exports.default.fetch(new Request(`${BASE}${path}`, { redirect: "manual", ...init }));

const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0];
export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

export interface Signed {
	cookie: string;
	csrf: string;
	get(path: string): Promise<Response>;
	/** A form POST (urlencoded; repeated names from arrays), CSRF token included. */
	post(path: string, fields: Record<string, string | string[]>): Promise<Response>;
}

export async function signIn(): Promise<Signed> {
	const login = await fetchPage("/dashboard/login");
	const loginCookie = cookieOf(login, "dash_login") ?? "";
	const res = await fetchPage("/dashboard/login", {
		method: "POST",
		headers: { cookie: loginCookie },
		body: new URLSearchParams({ _csrf: csrfOf(await login.text()), token: ADMIN_TOKEN }),
	});
	expect(res.status).toBe(303);
	const cookie = cookieOf(res, "dash_session") ?? "";
	const csrf = csrfOf(await (await fetchPage("/dashboard", { headers: { cookie } })).text());
	return {
		cookie,
		csrf,
		get: (path) => fetchPage(path, { headers: { cookie } }),
		post: (path, fields) => {
			const body = new URLSearchParams({ _csrf: csrf });
			for (const [name, value] of Object.entries(fields)) for (const v of [value].flat()) body.append(name, v);
			return fetchPage(path, { method: "POST", headers: { cookie }, body });
		},
	};
}

/** Follows a 303 of the dashboard (post/redirect/get) and returns the page it leads to. */
export async function follow(session: Signed, res: Response): Promise<{ url: URL; html: string; status: number }> {
	expect(res.status).toBe(303);
	const url = new URL(res.headers.get("location") ?? "", BASE);
	const page = await session.get(`${url.pathname}${url.search}`);
	return { url, html: await page.text(), status: page.status };
}

export const registerUser = async (app: TestApp, body: Record<string, unknown>) => {
	const res = await app.api("register", body);
	if (!res.body.success) throw new Error(JSON.stringify(res.body));
	return res.body as { userkey: string; referralcode: string };
};

// customid is an integer: a per-file random base keeps runs of several files apart.
let nextCustomId = 1_000_000 + Math.floor(Math.random() * 1e9);
export async function conversion(app: TestApp, userkey: string, eventname = "Signup", extra: Record<string, unknown> = {}) {
	const res = await app.api("registerconversionevent", {
		userkey,
		eventname,
		customid: String(nextCustomId++),
		growthhack: "SaaS_Referrals",
		...extra,
	});
	if (!res.body.success) throw new Error(JSON.stringify(res.body));
	return res.body;
}

export const newCustomId = () => String(nextCustomId++);

export const flushLedger = (app: TestApp, userkey: string) => ledgerFor(env, app.appid, userkey).flush();
