import { exactOrigin } from "./frame-origin";

/**
 * The deployment's public origin (the var PUBLIC_ORIGIN, per environment in
 * wrangler.toml; local: the dev origin): the base of every link the service
 * puts in an email (password resets, invitations, share links) and of the
 * links its answers carry. Never the request's Host: a request sent with
 * `Host: evil.example` must not make a reset email point there (issue 47).
 * Null when the var is unset or is not an http(s) origin: a link that needs
 * it is then not made (the caller says so), never guessed from the request.
 */
export function publicOrigin(env: { PUBLIC_ORIGIN?: string }): string | null {
	const raw = env.PUBLIC_ORIGIN?.trim();
	return raw ? exactOrigin(raw) : null;
}

/**
 * The base of share links in emails: SHARE_BASE_URL when set (share links on
 * their own domain), else the public origin; empty when neither is set (the
 * email then leaves its share-link line out).
 */
export function shareLinkBase(env: { SHARE_BASE_URL?: string; PUBLIC_ORIGIN?: string }): string {
	return env.SHARE_BASE_URL || publicOrigin(env) || "";
}

/** What a deployment without a usable PUBLIC_ORIGIN is told when an action needs a link (503 public_origin_unset). */
export const PUBLIC_ORIGIN_UNSET =
	"This deployment has no PUBLIC_ORIGIN (wrangler.toml [vars], e.g. https://referrals.example.com): links in emails are built on it, never on the request's Host. Set it and deploy again.";
