/**
 * The user's share link: served by this service at `/r/<code>`, on the
 * campaign's custom domain when it has one, else on SHARE_BASE_URL, else on
 * the origin the request came to.
 */
export function shareUrl(code: string, customdomain: string, shareBaseUrl: string, requestOrigin: string): string {
	const base = customdomain ? `https://${customdomain}` : (shareBaseUrl || requestOrigin).replace(/\/+$/, "");
	return `${base}/r/${encodeURIComponent(code)}`;
}

/**
 * Where a share-link click goes: the landing URL with `referrercode=<code>`
 * added, keeping the landing URL's own query and fragment.
 */
/**
 * A share link for an email: on the campaign's custom domain, else on
 * `base` (SHARE_BASE_URL or PUBLIC_ORIGIN: domain/public-origin.ts
 * `shareLinkBase`), never on a request's origin; empty when there is neither
 * (the email leaves its share-link line out).
 */
export function emailShareUrl(code: string, customdomain: string | null, base: string): string {
	return customdomain || base ? shareUrl(code, customdomain ?? "", base, "") : "";
}

export function landingRedirect(landingurl: string, code: string | null): string {
	const url = new URL(landingurl);
	if (code) url.searchParams.set("referrercode", code);
	return url.toString();
}
