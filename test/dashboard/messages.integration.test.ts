import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";
import { follow, signIn } from "../support/dashboard";

/**
 * Issue 34: the dashboard's campaign email editor without script (the
 * browser test, test/e2e/messages.browser.e2e.test.ts, covers the live
 * preview): the Preview button's page, saving, an unknown variable refused,
 * and the logo and colour in the app's settings.
 */

describe("the campaign email editor", () => {
	it("previews what was typed, saves it, and refuses an unknown variable with nothing saved", async () => {
		const app = await createApp();
		await admin("PATCH", `/apps/${app.appid}`, { logourl: "https://cdn.example.com/l.png" });
		const session = await signIn();
		const editor = `/dashboard/apps/${app.appid}/campaigns/${app.campaignid}/messages`;

		const first = await session.get(`${editor}?kind=reminder&lang=es`);
		expect(first.status).toBe(200);
		const html = await first.text();
		expect(html).toContain('data-testid="preview-subject">Ann te recuerda: Give $10 &amp; get $10!</dd>');
		expect(html).toContain("<code>{{friendname}}</code>");

		const preview = await session.post(`${editor}/preview`, {
			kind: "reminder",
			language: "es",
			subject: "Hola {{friendname}}",
			body: "<i>{{reward}}</i>\r\n\r\n{{sharelink}}",
		});
		expect(preview.status).toBe(200);
		const shown = await preview.text();
		expect(shown).toContain('data-testid="preview-subject">Hola Bob</dd>');
		// The link as the real reminder carries it (issue 48): the service's origin, SHARE_BASE_URL being unset.
		expect(shown).toMatch(/&lt;i&gt;10 USD&lt;\/i&gt;\n\nhttps?:\/\/[^/\s]+\/r\/ANN123<\/pre>/);
		expect(shown).not.toContain("https://example.com/r/ANN123");
		// The HTML part sits in a sandboxed iframe, itself escaped once more as an attribute, logo included.
		expect(shown).toMatch(/<iframe title="Email preview, HTML part" sandbox="" srcdoc="[^"]*https:\/\/cdn\.example\.com\/l\.png/);

		const saved = await follow(
			session,
			await session.post(editor, { kind: "reminder", language: "es", subject: "Hola {{friendname}}", body: "Mira {{sharelink}}" }),
		);
		expect(saved.html).toContain("Email saved");
		expect(saved.html).toContain("this campaign&#39;s text");

		const refused = await session.post(editor, { kind: "reminder", language: "es", subject: "Hola", body: "{{apodo}}" });
		expect(refused.status).toBe(400);
		expect(await refused.text()).toContain("unknown variable {{apodo}}");
		const stored = await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}/messages`);
		expect(stored.body.messages.reminder.templates.es).toMatchObject({ body: "Mira {{sharelink}}", custom: true });

		const reset = await follow(session, await session.post(`${editor}/reset`, { kind: "reminder", language: "es" }));
		expect(reset.html).toContain("the default text");
	});

	it("edits the reward-earned email in French with its preview, and sets whether the campaign sends it", async () => {
		const app = await createApp();
		const session = await signIn();
		const editor = `/dashboard/apps/${app.appid}/campaigns/${app.campaignid}/messages`;
		const page = await (await session.get(`${editor}?kind=reward&lang=fr`)).text();
		expect(page).toContain('data-testid="preview-subject">Vous avez gagné 10 USD</dd>');
		expect(page).toContain("<code>{{friendname}}</code>");
		expect(page).toMatch(/<option value="auto" selected="">When the app has an email sender/);

		const saved = await follow(
			session,
			await session.post(editor, { kind: "reward", language: "fr", subject: "Bravo", body: "{{reward}} !" }),
		);
		expect(saved.html).toContain("Email saved");
		const refused = await session.post(editor, { kind: "reward", language: "fr", subject: "Bravo", body: "{{montant}}" });
		expect(refused.status).toBe(400);

		const set = await follow(session, await session.post(`${editor}/settings`, { rewardemail: "off" }));
		expect(set.html).toContain("it applies to the next reward earned");
		expect(set.html).toMatch(/<option value="off" selected="">Never/);
		expect((await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}/messages`)).body).toMatchObject({
			rewardemail: "off",
			messages: { reward: { templates: { fr: { subject: "Bravo", body: "{{reward}} !", custom: true } } } },
		});
	});

	it("the app's settings form sets the logo and accent colour, and shows a refusal as typed", async () => {
		const app = await createApp();
		const session = await signIn();
		const base = `/dashboard/apps/${app.appid}`;
		const form = { name: "Brand", timezone: "UTC", logourl: "https://cdn.example.com/b.png", accentcolor: "#0A7D32" };
		await follow(session, await session.post(base, form));
		expect((await admin("GET", `/apps/${app.appid}`)).body).toMatchObject({
			logourl: "https://cdn.example.com/b.png",
			accentcolor: "#0a7d32",
		});
		const bad = await session.post(base, { ...form, logourl: "http://cdn.example.com/b.png" });
		expect(bad.status).toBe(400);
		const page = await bad.text();
		expect(page).toContain("logourl");
		expect(page).toContain('value="http://cdn.example.com/b.png"');
	});
});
