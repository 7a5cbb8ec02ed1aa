/**
 * Origins allowed to frame an app's hosted referral page (CSP
 * `frame-ancestors`): exact origins only, scheme + host + port, never a
 * pattern. CSP would read `https://*.evil.example` as "every subdomain", and
 * a host with other characters could smuggle more sources into the header, so
 * the host must be a DNS name (letters, digits, hyphens, dots) or an IP
 * literal. A URL with a path is reduced to its origin; one with a user name or
 * password, or another scheme than http(s), is not an origin at all.
 */

const DNS_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/;

/** The exact origin `raw` names (`https://shop.example:8443`), or null when it is none (wildcard, bad host, credentials, scheme). */
export function exactOrigin(raw: string): string | null {
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		return null;
	}
	if (url.protocol !== "https:" && url.protocol !== "http:") return null;
	if (url.username || url.password) return null;
	const host = url.hostname.toLowerCase();
	if (!DNS_NAME.test(host) && !IPV6_LITERAL.test(host)) return null;
	return url.origin;
}
