import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LOGO_MAX_BYTES } from "../../src/domain/logo";
import { ADMIN_TOKEN, admin, createApp, request } from "../support/api";

/**
 * Logo upload (issue 48, docs/messages.md "Brand"): PUT /admin/v1/apps/{appid}/logo
 * takes a PNG, JPEG or WebP judged by its bytes, refuses SVG, anything else
 * and anything over the cap; the Worker serves it at a content-addressed
 * path, immutable and nosniff; a new logo, a logo URL or DELETE removes the
 * stored file; the share page and the emails show it.
 */

/** A 1x1 PNG. */
const PNG = Uint8Array.from(
	atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
	(ch) => ch.charCodeAt(0),
);
/** Another PNG (other bytes, so another hash). */
const PNG2 = Uint8Array.from([...PNG, 0]);
const JPEG = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0xff, 0xd9]);
const WEBP = new TextEncoder().encode("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00");
const SVG = new TextEncoder().encode('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');

function upload(appid: string, bytes: BodyInit, type = "image/png", token = ADMIN_TOKEN) {
	return request(`/admin/v1/apps/${appid}/logo`, {
		method: "PUT",
		headers: { authorization: `Bearer ${token}`, "content-type": type },
		body: bytes,
	});
}

const pathOf = (logourl: string) => new URL(logourl).pathname;
const logoOf = async (appid: string) => (await admin<{ logourl: string | null }>("GET", `/apps/${appid}`)).body.logourl;

describe("PUT /admin/v1/apps/{appid}/logo", () => {
	it("stores a PNG under its hash, sets logourl on the public origin and serves it immutable, nosniff, as image/png", async () => {
		const { appid } = await createApp();
		const res = await upload(appid, PNG);
		expect(res.status).toBe(200);
		const body = (await res.json()) as { logourl: string; contenttype: string; bytes: number };
		expect(body.logourl).toMatch(new RegExp(`^http://service\\.test/logos/${appid}/[0-9a-f]{64}\\.png$`));
		expect(body).toMatchObject({ contenttype: "image/png", bytes: PNG.length });
		expect(await logoOf(appid)).toBe(body.logourl);

		const served = await request(pathOf(body.logourl));
		expect(served.status).toBe(200);
		expect(served.headers.get("content-type")).toBe("image/png");
		expect(served.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
		expect(served.headers.get("x-content-type-options")).toBe("nosniff");
		expect(new Uint8Array(await served.arrayBuffer())).toEqual(PNG);
		// The hash is the ETag: a revalidation is answered 304 without a body.
		const etag = served.headers.get("etag");
		expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
		const again = await request(pathOf(body.logourl), { headers: { "if-none-match": etag ?? "" } });
		expect(again.status).toBe(304);

		const audit = await admin<{ entries: { action: string; changes: Record<string, unknown> }[] }>(
			"GET",
			`/apps/${appid}/audit?action=app.logo_upload`,
		);
		expect(audit.body.entries).toHaveLength(1);
		expect(audit.body.entries[0]?.changes).toEqual({ logourl: { before: null, after: body.logourl } });
	});

	it("judges the type by the bytes: JPEG and WebP are served as such; a PNG labelled image/jpeg, an SVG, text are refused and change nothing", async () => {
		const { appid } = await createApp();
		const jpeg = (await (await upload(appid, JPEG, "image/jpeg")).json()) as { logourl: string };
		expect(jpeg.logourl).toMatch(/\.jpg$/);
		expect((await request(pathOf(jpeg.logourl))).headers.get("content-type")).toBe("image/jpeg");
		const webp = (await (await upload(appid, WEBP, "image/webp")).json()) as { logourl: string };
		expect(webp.logourl).toMatch(/\.webp$/);
		expect((await request(pathOf(webp.logourl))).headers.get("content-type")).toBe("image/webp");

		const mislabelled = await upload(appid, PNG, "image/jpeg");
		expect(mislabelled.status).toBe(415);
		expect(await mislabelled.json()).toMatchObject({ errorcode: "unsupported_media_type", fields: ["logo"] });
		// An SVG is refused whatever it is labelled, and says why.
		for (const type of ["image/svg+xml", "image/png"]) {
			const svg = await upload(appid, SVG, type);
			expect(svg.status).toBe(415);
			expect(((await svg.json()) as { message: string }).message).toMatch(/SVG logos are not accepted.*PNG/);
		}
		const text = await upload(appid, new TextEncoder().encode("GIF89a, or so it says"), "image/png");
		expect(text.status).toBe(415);
		expect(((await text.json()) as { message: string }).message).toContain("not a PNG, JPEG or WebP");
		expect(await logoOf(appid)).toBe(webp.logourl);
	});

	it(`accepts ${LOGO_MAX_BYTES} bytes and refuses one more, with or without a declared length`, async () => {
		const { appid } = await createApp();
		const sized = (n: number) => {
			const bytes = new Uint8Array(n);
			bytes.set(PNG);
			return bytes;
		};
		expect((await upload(appid, sized(LOGO_MAX_BYTES))).status).toBe(200);
		const stored = await logoOf(appid);
		const over = await upload(appid, sized(LOGO_MAX_BYTES + 1));
		expect(over.status).toBe(413);
		expect(await over.json()).toMatchObject({ errorcode: "payload_too_large", fields: ["logo"] });
		// A streamed body has no length: refused at the first chunk past the cap.
		const chunk = sized(64 * 1024);
		const stream = new ReadableStream<Uint8Array>({
			start(controller) {
				for (let i = 0; i < 5; i++) controller.enqueue(chunk);
				controller.close();
			},
		});
		const streamed = await upload(appid, stream);
		expect(streamed.status).toBe(413);
		expect(await logoOf(appid)).toBe(stored);
	});

	it("deletes the file it replaces; a logo URL over it deletes it too; DELETE removes logo and file, audited", async () => {
		const { appid } = await createApp();
		const first = ((await (await upload(appid, PNG)).json()) as { logourl: string }).logourl;
		const second = ((await (await upload(appid, PNG2)).json()) as { logourl: string }).logourl;
		expect(second).not.toBe(first);
		expect((await request(pathOf(first))).status).toBe(404);
		expect((await request(pathOf(second))).status).toBe(200);
		// The same bytes again: the same URL, still served.
		expect(((await (await upload(appid, PNG2)).json()) as { logourl: string }).logourl).toBe(second);
		expect((await request(pathOf(second))).status).toBe(200);

		const patched = await admin("PATCH", `/apps/${appid}`, { logourl: "https://cdn.example.com/logo.png" });
		expect(patched.status).toBe(200);
		expect((await request(pathOf(second))).status).toBe(404);

		const third = ((await (await upload(appid, PNG)).json()) as { logourl: string }).logourl;
		const removed = await admin("DELETE", `/apps/${appid}/logo`);
		expect(removed).toEqual({ status: 200, body: { appid, logourl: null } });
		expect(await logoOf(appid)).toBeNull();
		expect((await request(pathOf(third))).status).toBe(404);
		expect(await env.LOGOS.list({ prefix: `${appid}/` })).toMatchObject({ objects: [] });
		const audit = await admin<{ entries: { changes: Record<string, unknown> }[] }>("GET", `/apps/${appid}/audit?action=app.logo_delete`);
		expect(audit.body.entries.map((e) => e.changes)).toEqual([{ logourl: { before: third, after: null } }]);
	});

	it("is a manager's: a viewer is refused, a manager uploads", async () => {
		const { appid } = await createApp();
		const tokenOf = async (role: string) =>
			(await admin<{ token: string }>("POST", `/apps/${appid}/tokens`, { name: `${role} token`, role })).body.token;
		const refused = await upload(appid, PNG, "image/png", await tokenOf("viewer"));
		expect(refused.status).toBe(403);
		expect((await upload(appid, PNG, "image/png", await tokenOf("manager"))).status).toBe(200);
	});

	it("serves a stored logo at its path and nothing at a path that is not a stored logo's", async () => {
		const { appid } = await createApp();
		const stored = ((await (await upload(appid, PNG)).json()) as { logourl: string }).logourl;
		expect((await request(pathOf(stored))).status).toBe(200);
		for (const path of [`/logos/${appid}/${"a".repeat(64)}.png`, `/logos/${appid}/logo.svg`, `/logos/${appid}/../x`]) {
			expect((await request(path)).status, path).toBe(404);
		}
	});
});

describe("an uploaded logo on the share page and in emails", () => {
	it("is shown over http on the deployment's own origin, which the page's CSP allows", async () => {
		const created = await createApp();
		const logourl = ((await (await upload(created.appid, PNG)).json()) as { logourl: string }).logourl;
		const ann = await created.api("register", { email: `ann-${crypto.randomUUID()}@example.com` });
		const link = new URL((await created.api("getsharepage", { userkey: ann.body.userkey })).body.url);
		const page = await request(`${link.pathname}${link.search}`);
		expect(await page.text()).toContain(`<img class="logo" id="app-logo" src="${logourl}" alt="Test app"`);
		expect(page.headers.get("content-security-policy")).toContain("img-src http://service.test;");

		const preview = await admin<{ html: string }>(
			"POST",
			`/apps/${created.appid}/campaigns/${created.campaignid}/messages/outreach/en/preview`,
			{ subject: "Hi", body: "Share {{sharelink}}" },
		);
		expect(preview.status).toBe(200);
		expect(preview.body.html).toContain(`<img src="${logourl}" alt="Test app"`);
	});
});
