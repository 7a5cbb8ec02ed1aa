/**
 * Uploaded logos (issue 48, docs/messages.md "Brand"): what an upload may be,
 * where it is stored and served, and which logo URLs a page or an email shows.
 *
 * An upload is a PNG, JPEG or WebP image, told by its first bytes (its
 * Content-Type alone proves nothing), of at most LOGO_MAX_BYTES. SVG is
 * refused, not sanitised: an SVG is a document that can carry script, event
 * handlers and references to other origins, and a sanitiser that misses one
 * serves that script from the Worker's own origin; a logo needs none of it.
 *
 * Stored in the R2 bucket LOGOS under `<appid>/<sha-256 of the bytes>.<ext>`
 * (content-addressed: a new image is a new URL, so the served file is
 * immutable and cached for good), served at `/logos/<that key>`, and set as
 * the app's `logourl` on the deployment's public origin.
 */

/** The largest logo accepted, in bytes: a logo is drawn at most 12rem x 3rem on the page, 200 x 48 px in emails. */
export const LOGO_MAX_BYTES = 256 * 1024;

export type LogoType = "png" | "jpeg" | "webp";

/** The content type each accepted type is served with. */
export const LOGO_CONTENT_TYPES: Readonly<Record<LogoType, string>> = {
	png: "image/png",
	jpeg: "image/jpeg",
	webp: "image/webp",
};

/** The file extension of each accepted type in the served path. */
const EXTENSIONS: Readonly<Record<LogoType, string>> = { png: "png", jpeg: "jpg", webp: "webp" };

const startsWith = (bytes: Uint8Array, prefix: readonly number[], at = 0) =>
	bytes.length >= at + prefix.length && prefix.every((b, i) => bytes[at + i] === b);

/**
 * What the bytes are, from their signature: an accepted image type, "svg"
 * (refused, said so by name), or null (anything else).
 */
export function sniffLogo(bytes: Uint8Array): LogoType | "svg" | null {
	if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
	if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg";
	// RIFF <size> WEBP
	if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)) return "webp";
	// Text that opens (after a BOM, blanks, an XML declaration or comments) with an <svg element.
	const head = new TextDecoder().decode(bytes.subarray(0, 1024)).replace(/^\uFEFF/, "");
	if (/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<svg[\s>]/i.test(head)) return "svg";
	return null;
}

/** The bucket key of an app's logo: its appid, then the hash of the bytes and the type's extension. */
export const logoKey = (appid: string, sha256hex: string, type: LogoType) => `${appid}/${sha256hex}.${EXTENSIONS[type]}`;

/** The public path a stored logo is served at. */
export const LOGO_PATH_PREFIX = "/logos/";

/** The key a served path names, if it has a stored logo's shape (an appid, a 64-hex hash and an accepted extension). */
export function keyOfLogoPath(appid: string, file: string): { key: string; type: LogoType } | null {
	const match = /^([0-9a-f]{64})\.(png|jpg|webp)$/.exec(file);
	if (!match || !/^[\w-]{1,64}$/.test(appid)) return null;
	const type = (Object.keys(EXTENSIONS) as LogoType[]).find((t) => EXTENSIONS[t] === match[2]);
	return type ? { key: `${appid}/${file}`, type } : null;
}

/**
 * The bucket key of an app's `logourl` when it is a logo this deployment
 * stored for that app (on its public origin, under the app's own prefix),
 * else null (an https URL elsewhere, or none): only such a key is ever
 * deleted on the app's behalf.
 */
export function ownLogoKey(logourl: string | null, origin: string | null, appid: string): string | null {
	if (!logourl || !origin || !logourl.startsWith(`${origin}${LOGO_PATH_PREFIX}`)) return null;
	const [owner, file, ...rest] = logourl.slice(origin.length + LOGO_PATH_PREFIX.length).split("/");
	if (owner !== appid || !file || rest.length > 0) return null;
	return keyOfLogoPath(owner, file)?.key ?? null;
}

/**
 * Whether a page or an email shows `logourl`: an https URL (the admin API
 * accepts no other from an operator), or a logo this deployment serves on
 * its public origin (locally http://127.0.0.1:8787, so a local upload shows).
 */
export function isShownLogo(logourl: string | null, origin: string | null): logourl is string {
	if (!logourl) return false;
	if (logourl.startsWith("https://")) return true;
	return origin !== null && logourl.startsWith(`${origin}${LOGO_PATH_PREFIX}`);
}
