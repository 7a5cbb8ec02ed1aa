import { describe, expect, it } from "vitest";
import { admin, createApp, request } from "../support/api";
import { fetchPage, follow, signIn } from "../support/dashboard";
import { acceptFromMailbox } from "../support/mailbox";

/**
 * The console's logo form (issue 48): a multipart upload through the dashboard
 * reaches PUT /admin/v1/apps/{appid}/logo; saving the settings afterwards keeps
 * the uploaded logo (its local URL is http, which the Logo URL field alone would
 * refuse); a refused file answers the page with the message at the file field.
 */

const PNG = Uint8Array.from(
	atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
	(ch) => ch.charCodeAt(0),
);

const logoOf = async (appid: string) => (await admin<{ logourl: string | null }>("GET", `/apps/${appid}`)).body.logourl;

describe("the console's logo form", () => {
	it("uploads multipart, and a settings save afterwards keeps the uploaded logo", async () => {
		const { appid } = await createApp();
		const session = await signIn();
		const form = new FormData();
		form.append("_csrf", session.csrf);
		form.append("logo", new File([PNG], "logo.png", { type: "image/png" }));
		const res = await fetchPage(`/dashboard/apps/${appid}/logo`, { method: "POST", headers: { cookie: session.cookie }, body: form });
		const page = await follow(session, res);
		expect(page.html).toContain("Logo uploaded");
		const logourl = await logoOf(appid);
		expect(logourl).toMatch(/^http:\/\/service\.test\/logos\//);
		expect(page.html).toContain(`<img id="current-logo" src="${logourl}"`);
		expect((await request(new URL(logourl ?? "").pathname)).status).toBe(200);

		// The settings form carries the logo's URL back as it was: saved, and the logo stays.
		const saved = await session.post(`/dashboard/apps/${appid}`, { name: "Renamed", logourl: logourl ?? "", timezone: "UTC" });
		expect((await follow(session, saved)).html).toContain("Settings saved");
		expect(await logoOf(appid)).toBe(logourl);

		const removed = await session.post(`/dashboard/apps/${appid}/logo/delete`, {});
		expect((await follow(session, removed)).html).toContain("Logo removed");
		expect(await logoOf(appid)).toBeNull();
		expect((await request(new URL(logourl ?? "").pathname)).status).toBe(404);
	});

	it("answers a refused file with the page, the message at the file field, nothing changed", async () => {
		const { appid } = await createApp();
		const session = await signIn();
		const form = new FormData();
		form.append("_csrf", session.csrf);
		form.append("logo", new File(['<svg xmlns="http://www.w3.org/2000/svg"/>'], "logo.svg", { type: "image/svg+xml" }));
		const res = await fetchPage(`/dashboard/apps/${appid}/logo`, { method: "POST", headers: { cookie: session.cookie }, body: form });
		expect(res.status).toBe(400);
		const html = await res.text();
		expect(html).toMatch(/<input id="f-logo"[^>]*aria-invalid="true"/);
		expect(html).toMatch(/<p id="f-logo-error" class="field-error">The logo was not uploaded: SVG logos are not accepted/);
		expect(await logoOf(appid)).toBeNull();
	});

	it("is shown to a manager, who uploads; not to a viewer", async () => {
		const app = await createApp();
		const memberPage = async (role: string) => {
			const email = `${role}-${crypto.randomUUID()}@example.com`;
			expect((await admin("POST", `/apps/${app.appid}/members`, { email, role })).status).toBe(201);
			const { cookie } = await acceptFromMailbox(app.appid, email, "a long enough password");
			return (await fetchPage(`/dashboard/apps/${app.appid}`, { headers: { cookie } })).text();
		};
		expect(await memberPage("manager")).toContain('id="f-logo"');
		expect(await memberPage("viewer")).not.toContain('id="f-logo"');
	});
});
