import { Hono } from "hono";
import { keyOfLogoPath, LOGO_CONTENT_TYPES } from "../domain/logo";
import { ApiError } from "../http/errors";

/**
 * Uploaded logos, served publicly (`/logos/<appid>/<sha-256>.<ext>`, domain/logo.ts)
 * for share pages, the widget's frame and emails. The path names the bytes'
 * hash, so a file never changes under its URL: cached for a year as immutable.
 */
export const logoFileRoutes = new Hono<{ Bindings: Env }>();

/** A year: the longest max-age caches honour; a new logo is a new URL. */
const IMMUTABLE = "public, max-age=31536000, immutable";

logoFileRoutes.get("/logos/:appid/:file", async (c) => {
	const found = keyOfLogoPath(c.req.param("appid"), c.req.param("file"));
	const notFound = () => new ApiError(404, "not_found", "No logo at this path.");
	if (!found) throw notFound();
	const etag = `"${c.req.param("file").split(".")[0]}"`;
	const headers = {
		// The type the upload was sniffed as (the extension says it), never one guessed from the bytes by a browser.
		"Content-Type": LOGO_CONTENT_TYPES[found.type],
		"Cache-Control": IMMUTABLE,
		ETag: etag,
		"X-Content-Type-Options": "nosniff",
		// Loaded by share pages framed on other sites and by mail clients: any origin may embed it.
		"Cross-Origin-Resource-Policy": "cross-origin",
		// Opened on its own, the file may do nothing but be an image.
		"Content-Security-Policy": "default-src 'none'; sandbox",
	};
	if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
	const object = await c.env.LOGOS.get(found.key);
	if (!object) throw notFound();
	return c.body(object.body, 200, { ...headers, "Content-Length": String(object.size) });
});
