import { Hono } from "hono";
import { openApiDocument } from "./document";

/** `GET /openapi.json` (the contract) and `GET /docs` (its interactive reference). */
export const openApiRoutes = new Hono<{ Bindings: Env }>();

const documents = new Map<string, string>();

openApiRoutes.get("/openapi.json", (c) => {
	const server = new URL(c.req.url).origin;
	let text = documents.get(server);
	if (!text) {
		text = JSON.stringify(openApiDocument(server));
		if (documents.size < 16) documents.set(server, text);
	}
	c.header("Access-Control-Allow-Origin", "*");
	c.header("Cache-Control", "public, max-age=300");
	return c.body(text, 200, { "Content-Type": "application/json; charset=utf-8" });
});

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Referral and rewards API reference</title>
</head>
<body>
<div id="app"></div>
<script src="/docs/scalar.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>`;

// withDefaultFonts: false keeps Scalar from loading its fonts from fonts.scalar.com; the
// AI agent, MCP and developer tools are Scalar's hosted services, so they are off.
const INIT_JS = `Scalar.createApiReference("#app", {
	url: "/openapi.json",
	withDefaultFonts: false,
	agent: { disabled: true },
	mcp: { disabled: true },
	showDeveloperTools: "never",
});`;

// Everything from this origin; Scalar styles with inline style attributes.
const DOCS_CSP =
	"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

openApiRoutes.get("/docs", (c) => {
	c.header("Content-Security-Policy", DOCS_CSP);
	c.header("X-Frame-Options", "DENY");
	return c.html(DOCS_HTML);
});

// /docs/scalar.js is a static asset (wrangler.toml [assets], scripts/static-assets.mjs): Scalar's
// browser bundle is served by Cloudflare's asset layer, from this origin, not from the Worker's bundle.

openApiRoutes.get("/docs/init.js", (c) => c.body(INIT_JS, 200, { "Content-Type": "text/javascript; charset=utf-8" }));
