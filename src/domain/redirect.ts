/**
 * Where the dashboard may send a browser after a form: only a path under
 * /dashboard on this site. The target is normalized first, as a browser
 * would resolve it (dot segments, backslashes read as slashes, percent-encoded
 * slashes left alone), and checked after: `/dashboard/../..//evil.example/x`
 * resolves to `//evil.example/x`, a protocol-relative URL to another site,
 * and `/\\evil.example` to the host evil.example; both are refused.
 */

/** C0 controls, space and DEL: URL parsers drop or keep them differently. */
const hasControlOrSpace = (text: string) =>
	[...text].some((ch) => {
		const code = ch.charCodeAt(0);
		return code <= 0x20 || code === 0x7f;
	});

/** Any origin: only used to resolve a path and tell whether it stayed on it. */
const HERE = "https://dashboard.invalid";

/** The normalized `path?query#hash` of `target` when it stays under /dashboard on this site, else null. */
export function dashboardPath(target: string): string | null {
	// Control characters and whitespace are stripped by URL parsers in ways browsers may not all share: refuse them.
	if (!target.startsWith("/") || hasControlOrSpace(target)) return null;
	let url: URL;
	try {
		url = new URL(target, HERE);
	} catch {
		return null;
	}
	if (url.origin !== HERE) return null;
	const path = url.pathname;
	// `//host` or `/\host` in the result would leave the site once sent as a Location.
	if (path.startsWith("//") || path.includes("\\")) return null;
	if (path !== "/dashboard" && !path.startsWith("/dashboard/")) return null;
	return `${path}${url.search}${url.hash}`;
}

/** `target` normalized when it is a dashboard path, else `fallback`. */
export function dashboardPathOr(target: unknown, fallback: string): string {
	return (typeof target === "string" && dashboardPath(target)) || fallback;
}
