// Copies the browser files the Worker serves as Workers Static Assets
// (wrangler.toml [assets]) out of node_modules into public/, so they are
// served by Cloudflare's asset layer instead of weighing on the Worker's
// bundle and isolate start. Run by `npm install` (the `prepare` script);
// public/ is generated, never committed. Also run before every `wrangler dev`
// and `wrangler deploy` (wrangler.toml [build]), so docs/api.md is current.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// A file added here needs its path among wrangler.toml's run_worker_first exclusions
// (`!/...`): every other path goes to the Worker without the asset layer being asked.
const files = [
	// Scalar's API reference for /docs (src/openapi/routes.ts).
	["node_modules/@scalar/api-reference/dist/browser/standalone.js", "public/docs/scalar.js"],
	// @simplewebauthn/browser's bundle (the global SimpleWebAuthnBrowser) for the dashboard's passkeys (src/dashboard/passkeys.tsx).
	["node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js", "public/dashboard/static/webauthn.js"],
	// The API reference as text: every error answer's `docs` link points at its code's heading here
	// (src/http/request-id.ts), so the link works on each deployment and documents the code it runs.
	["docs/api.md", "public/docs/api.md"],
];
for (const [from, to] of files) {
	mkdirSync(dirname(join(root, to)), { recursive: true });
	copyFileSync(join(root, from), join(root, to));
}

// Headers of the assets (Cloudflare's _headers format): the same nosniff and
// referrer policy as the Worker's own responses (src/http/security-headers.ts).
writeFileSync(
	join(root, "public/_headers"),
	[
		"/*",
		"  X-Content-Type-Options: nosniff",
		"  Referrer-Policy: no-referrer",
		"/docs/*",
		"  Cache-Control: public, max-age=86400",
		// Shown in the browser as text rather than downloaded.
		"/docs/api.md",
		"  Content-Type: text/plain; charset=utf-8",
		"/dashboard/static/*",
		"  Cache-Control: public, max-age=300",
		"",
	].join("\n"),
);
