import { exports } from "cloudflare:workers";

/** What the tour's steps share: a dashboard page fetch, its cookies and CSRF token, and a 2xx check. */

export const page = (path: string, init: RequestInit = {}) =>
	exports.default.fetch(new Request(`http://service.test${path}`, { redirect: "manual", ...init }));

export const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0] ?? "";

export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

/** Asserts a 2xx answer (a tour step that fails would leave its statements unsent, unnoticed). */
export function ok<T extends { status: number; body: unknown }>(res: T, what: string): T {
	if (res.status < 200 || res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
	return res;
}
