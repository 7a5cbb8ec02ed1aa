import { Hono } from "hono";
import { type App, updateApp } from "../db/apps";
import { LOGO_CONTENT_TYPES, LOGO_MAX_BYTES, LOGO_PATH_PREFIX, type LogoType, logoKey, ownLogoKey, sniffLogo } from "../domain/logo";
import { PUBLIC_ORIGIN_UNSET, publicOrigin } from "../domain/public-origin";
import { forgetCachedApp } from "../http/auth";
import { ApiError } from "../http/errors";
import { readBytesLimited } from "../http/json-body";
import { requireApp } from "./guard";
import { type AdminContext, type AdminEnv, auditEntry } from "./principal";

/**
 * An app's uploaded logo (issue 48, docs/messages.md "Brand"; rules in
 * domain/logo.ts): `PUT /apps/{appid}/logo` with the image as the raw body,
 * `DELETE /apps/{appid}/logo`. Mounted on adminRoutes (its auth applies).
 */
export const logoRoutes = new Hono<AdminEnv>();

const tooLarge = () =>
	new ApiError(
		413,
		"payload_too_large",
		`logo: the image is larger than ${LOGO_MAX_BYTES / 1024} KB; upload a smaller PNG, JPEG or WebP.`,
		{
			fields: ["logo"],
		},
	);

/** The body's bytes, refused at the first byte over the cap (a declared length over it is refused before any read). */
async function readImage(request: Request): Promise<Uint8Array> {
	if (Number(request.headers.get("content-length") ?? "0") > LOGO_MAX_BYTES) throw tooLarge();
	return readBytesLimited(request, LOGO_MAX_BYTES, tooLarge);
}

const unsupported = (message: string) => new ApiError(415, "unsupported_media_type", `logo: ${message}`, { fields: ["logo"] });

/** The image's type from its bytes; the declared Content-Type must not say otherwise (a mislabelled file is refused, not guessed). */
function typeOf(bytes: Uint8Array, declared: string | undefined): LogoType {
	if (bytes.length === 0)
		throw unsupported("the body is empty; send the image's bytes with its Content-Type (image/png, image/jpeg or image/webp).");
	const sniffed = sniffLogo(bytes);
	if (sniffed === "svg") {
		throw unsupported(
			"SVG logos are not accepted: an SVG can carry script and links that would run from this service's origin. Export the logo as a PNG (or WebP) and upload that.",
		);
	}
	if (sniffed === null) throw unsupported("the file is not a PNG, JPEG or WebP image (judged by its content, not its name).");
	const type = (declared ?? "").split(";")[0]!.trim().toLowerCase();
	if (type !== "" && type !== "application/octet-stream" && type !== LOGO_CONTENT_TYPES[sniffed]) {
		throw unsupported(`the Content-Type says ${type} but the bytes are a ${sniffed.toUpperCase()} image (${LOGO_CONTENT_TYPES[sniffed]}).`);
	}
	return sniffed;
}

function originOf(c: AdminContext): string {
	const origin = publicOrigin(c.env);
	// The logo's URL is built on the public origin, never on the request's Host (domain/public-origin.ts).
	if (!origin) throw new ApiError(503, "public_origin_unset", PUBLIC_ORIGIN_UNSET);
	return origin;
}

/**
 * Deletes the object of a logo this deployment stored for the app once the app
 * no longer points at it (replaced or removed). After the D1 write: a failure
 * here leaves an unreferenced object (content-addressed, never served as the
 * app's logo), never an app pointing at a missing one.
 */
export async function dropReplacedLogo(env: Env, app: Pick<App, "appid" | "logourl">, now: string | null): Promise<void> {
	const key = ownLogoKey(app.logourl, publicOrigin(env), app.appid);
	if (key && app.logourl !== now) await env.LOGOS.delete(key);
}

logoRoutes.put("/apps/:appid/logo", async (c) => {
	const before = await requireApp(c.env.DB, c.req.param("appid"));
	const origin = originOf(c);
	const bytes = await readImage(c.req.raw);
	const type = typeOf(bytes, c.req.header("content-type"));
	const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
	const key = logoKey(before.appid, [...digest].map((b) => b.toString(16).padStart(2, "0")).join(""), type);
	const logourl = `${origin}${LOGO_PATH_PREFIX}${key}`;
	// The object first, then the app's pointer to it: the app never names an object that is not there.
	await c.env.LOGOS.put(key, bytes, { httpMetadata: { contentType: LOGO_CONTENT_TYPES[type] } });
	const audit = auditEntry(c, before.appid, {
		action: "app.logo_upload",
		targetType: "app",
		targetId: before.appid,
		changes: { logourl: { before: before.logourl, after: logourl } },
	});
	if (!(await updateApp(c.env.DB, before.appid, { logourl }, audit))) throw new ApiError(404, "app_not_found", "No app with that appid.");
	await dropReplacedLogo(c.env, before, logourl);
	forgetCachedApp(before.appid);
	return c.json({ appid: before.appid, logourl, contenttype: LOGO_CONTENT_TYPES[type], bytes: bytes.length });
});

/** Removes the app's logo, uploaded or an https URL; an app without one is answered the same, and nothing is recorded. */
logoRoutes.delete("/apps/:appid/logo", async (c) => {
	const before = await requireApp(c.env.DB, c.req.param("appid"));
	if (before.logourl !== null) {
		const audit = auditEntry(c, before.appid, {
			action: "app.logo_delete",
			targetType: "app",
			targetId: before.appid,
			changes: { logourl: { before: before.logourl, after: null } },
		});
		if (!(await updateApp(c.env.DB, before.appid, { logourl: null }, audit)))
			throw new ApiError(404, "app_not_found", "No app with that appid.");
		await dropReplacedLogo(c.env, before, null);
		forgetCachedApp(before.appid);
	}
	return c.json({ appid: before.appid, logourl: null });
});
