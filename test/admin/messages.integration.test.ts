import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp, request } from "../support/api";

/**
 * Issue 34: an app's logo and accent colour, and a campaign's editable
 * emails through the admin API (docs/messages.md): saved only when every
 * variable is known, read back per language, previewed, and used by the
 * emails the service then sends (read from the local mailbox, /dev/mail).
 */

const messagesOf = (appid: string, campaignid: number) => `/apps/${appid}/campaigns/${campaignid}/messages`;

/** A request with an app-scoped token of `role`. */
async function asRole(appid: string, role: string) {
	const created = await admin<{ token: string }>("POST", `/apps/${appid}/tokens`, { name: `t-${role}`, role });
	return async (method: string, path: string, body?: unknown) => {
		const res = await request(`/admin/v1${path}`, {
			method,
			headers: { authorization: `Bearer ${created.body.token}`, "content-type": "application/json" },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		return { status: res.status, body: (await res.json()) as Record<string, any> };
	};
}

interface Mail {
	to: string;
	subject: string;
	text: string;
	html: string;
}

/** The first email to `to` in the local mailbox, waited for (the queue delivers after the answer). */
async function mailTo(to: string): Promise<Mail> {
	const deadline = Date.now() + 15_000;
	for (;;) {
		const { mail } = (await (await request("/dev/mail")).json()) as { mail: Mail[] };
		const found = mail.find((m) => m.to === to);
		if (found) return found;
		if (Date.now() > deadline) throw new Error(`no email to ${to}`);
		await new Promise((r) => setTimeout(r, 100));
	}
}

describe("app branding settings", () => {
	it("stores an https logo and a hex colour (normalized), for the test twin too", async () => {
		const { appid } = await createApp();
		const res = await admin("PATCH", `/apps/${appid}`, { logourl: "https://cdn.example.com/logo.png", accentcolor: "#F60" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ logourl: "https://cdn.example.com/logo.png", accentcolor: "#ff6600" });
		const twin = await env.DB.prepare("SELECT logourl, accentcolor FROM apps WHERE live_appid = ?").bind(appid).first();
		expect(twin).toEqual({ logourl: "https://cdn.example.com/logo.png", accentcolor: "#ff6600" });
		const cleared = await admin("PATCH", `/apps/${appid}`, { logourl: null, accentcolor: null });
		expect(cleared.body).toMatchObject({ logourl: null, accentcolor: null });
	});

	it("refuses a logo that is not https and a colour that is not hex, naming the field, changing nothing", async () => {
		const { appid } = await createApp();
		for (const [field, value] of [
			["logourl", "http://cdn.example.com/logo.png"],
			["logourl", "javascript:alert(1)"],
			["accentcolor", "red"],
			["accentcolor", "#12345"],
			["accentcolor", "#123456;background:url(x)"],
		]) {
			const res = await admin("PATCH", `/apps/${appid}`, { [field as string]: value });
			expect(res.status, `${field}=${value}`).toBe(400);
			expect(res.body.errorcode).toBe("validation_failed");
			expect(res.body.fields).toEqual([field]);
		}
		expect((await admin("GET", `/apps/${appid}`)).body).toMatchObject({ logourl: null, accentcolor: null });
	});
});

describe("a campaign's messages", () => {
	it("reads the defaults in every language, saves one, and resets it", async () => {
		const { appid, campaignid } = await createApp();
		const first = await admin("GET", messagesOf(appid, campaignid));
		expect(first.status).toBe(200);
		expect(first.body.languages).toEqual(["en", "fr", "de", "es"]);
		expect(first.body.messages.reminder.templates.fr).toMatchObject({
			custom: false,
			subject: "{{referrername}} vous rappelle : {{offertitle}}",
		});
		expect(Object.keys(first.body.messages.reminder.variables)).toContain("friendname");

		const saved = await admin("PUT", `${messagesOf(appid, campaignid)}/reminder/fr`, {
			subject: "{{referrername}} pense à vous",
			body: "Salut {{friendname}} !",
		});
		expect(saved.status).toBe(200);
		expect(saved.body).toEqual({
			kind: "reminder",
			language: "fr",
			subject: "{{referrername}} pense à vous",
			body: "Salut {{friendname}} !",
			custom: true,
		});
		const after = await admin("GET", messagesOf(appid, campaignid));
		expect(after.body.messages.reminder.templates.fr.custom).toBe(true);
		expect(after.body.messages.reminder.templates.en.custom).toBe(false);
		const audit = await admin("GET", `/apps/${appid}/audit`);
		expect(JSON.stringify(audit.body)).toContain("campaign.message_update");

		const reset = await admin("DELETE", `${messagesOf(appid, campaignid)}/reminder/fr`);
		expect(reset.body).toMatchObject({ custom: false, subject: "{{referrername}} vous rappelle : {{offertitle}}" });
	});

	it("refuses an unknown variable with 400 unknown_variable naming the field, and saves nothing", async () => {
		const { appid, campaignid } = await createApp();
		await admin("PUT", `${messagesOf(appid, campaignid)}/outreach/en`, { subject: "Old", body: "Old {{sharelink}}" });
		const res = await admin("PUT", `${messagesOf(appid, campaignid)}/outreach/en`, {
			subject: "New",
			body: "Hi {{firstname}}: {{sharelink}}",
		});
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ errorcode: "unknown_variable", fields: ["body"], unknown: ["firstname"] });
		expect(res.body.errors[0]).toMatchObject({ field: "body" });
		expect(res.body.message).toContain("{{firstname}}");
		expect((await admin("GET", messagesOf(appid, campaignid))).body.messages.outreach.templates.en).toMatchObject({
			subject: "Old",
			custom: true,
		});
		// The subject is checked too, and a reminder's variable is unknown to an outreach.
		const subject = await admin("PUT", `${messagesOf(appid, campaignid)}/outreach/en`, { subject: "{{friendname}}", body: "x" });
		expect(subject.body).toMatchObject({ errorcode: "unknown_variable", fields: ["subject"] });
		const preview = await admin("POST", `${messagesOf(appid, campaignid)}/outreach/en/preview`, { subject: "x", body: "{{nope}}" });
		expect(preview.body.errorcode).toBe("unknown_variable");
	});

	it("refuses an unknown kind or language, and another app's campaign", async () => {
		const { appid, campaignid } = await createApp();
		const other = await createApp();
		const kind = await admin("PUT", `${messagesOf(appid, campaignid)}/welcome/en`, { subject: "x", body: "y" });
		expect(kind.body).toMatchObject({ errorcode: "validation_failed", fields: ["kind"] });
		const lang = await admin("PUT", `${messagesOf(appid, campaignid)}/outreach/pt`, { subject: "x", body: "y" });
		expect(lang.body).toMatchObject({ errorcode: "validation_failed", fields: ["language"] });
		const foreign = await admin("PUT", `${messagesOf(other.appid, campaignid)}/outreach/en`, { subject: "x", body: "y" });
		expect(foreign.status).toBe(404);
		const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaignid = ?").bind(campaignid).first();
		expect(rows).toEqual({ n: 0 });
	});

	it("a viewer reads and previews; a manager saves", async () => {
		const { appid, campaignid } = await createApp();
		const viewer = await asRole(appid, "viewer");
		const manager = await asRole(appid, "manager");
		expect((await viewer("GET", messagesOf(appid, campaignid))).status).toBe(200);
		expect((await viewer("POST", `${messagesOf(appid, campaignid)}/reminder/en/preview`, { subject: "s", body: "b" })).status).toBe(200);
		const refused = await viewer("PUT", `${messagesOf(appid, campaignid)}/reminder/en`, { subject: "s", body: "b" });
		expect(refused).toMatchObject({ status: 403, body: { errorcode: "forbidden", needed: "manager" } });
		expect((await manager("PUT", `${messagesOf(appid, campaignid)}/reminder/en`, { subject: "s", body: "b" })).status).toBe(200);
	});

	it("previews with the campaign's offer and reward, the app's brand, a sample recipient, escaped", async () => {
		const { appid, campaignid } = await createApp();
		await admin("PATCH", `/apps/${appid}`, { logourl: "https://cdn.example.com/acme.png", accentcolor: "#aa0000" });
		const res = await admin("POST", `${messagesOf(appid, campaignid)}/reminder/en/preview`, {
			subject: "{{referrername}}: {{offertitle}}",
			body: "<b>Hi</b> {{friendname}}, you get {{reward}}.",
		});
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ subject: "Ann: Give $10 & get $10!", text: "<b>Hi</b> Bob, you get 10 USD." });
		expect(res.body.html).toContain("&lt;b&gt;Hi&lt;/b&gt; Bob");
		expect(res.body.html).toContain('src="https://cdn.example.com/acme.png"');
		expect(res.body.html).toContain("#aa0000");
	});
});

describe("the emails sent", () => {
	it("a reminder uses the campaign's template in the friend's language, the app's logo and colour", async () => {
		const { appid, campaignid, api } = await createApp();
		await admin("PATCH", `/apps/${appid}`, { logourl: "https://cdn.example.com/brand.png", accentcolor: "#0a7d32" });
		const saved = await admin("PUT", `${messagesOf(appid, campaignid)}/reminder/de`, {
			subject: "{{referrername}} wartet auf dich",
			body: "Hallo {{friendname}},\n\n{{referrername}} schenkt dir {{reward}}: {{sharelink}}\n\n{{referrername}} schreibt: {{message}}",
		});
		expect(saved.status, JSON.stringify(saved.body)).toBe(200);
		const friendEmail = `fr-${crypto.randomUUID()}@example.com`;
		const referrer = (await api("register", { email: `ref-${crypto.randomUUID()}@example.com`, name: "Rita" })).body;
		await api("register", { email: friendEmail, name: "Fred <F>", referrercode: referrer.referralcode });
		const res = await api("remindfriend", { userkey: referrer.userkey, friendemail: friendEmail, language: "de-AT" });
		expect(res.status).toBe(200);
		const mail = await mailTo(friendEmail);
		expect(mail.subject).toBe("Rita wartet auf dich");
		expect(mail.text).toBe(`Hallo Fred <F>,\n\nRita schenkt dir 10 USD: ${referrer.shareurl}`);
		expect(mail.html).toContain("Hallo Fred &lt;F&gt;,");
		expect(mail.html).toContain('<img src="https://cdn.example.com/brand.png" alt="Test app"');
		expect(mail.html).toContain("border-top:4px solid #0a7d32");
		expect(mail.html).toContain('<html lang="de">');
	});

	it("an outreach without a template of the user's language uses the campaign's English one, branded", async () => {
		const { appid, campaignid, api } = await createApp();
		await admin("PATCH", `/apps/${appid}`, { accentcolor: "#123abc" });
		await admin("PUT", `${messagesOf(appid, campaignid)}/outreach/en`, {
			subject: "{{appname}} picks you",
			body: "Share {{sharelink}} ({{reward}})",
		});
		const to = `o-${crypto.randomUUID()}@example.com`;
		const res = await api("invokeoutreach", { email: to, language: "es" });
		const mail = await mailTo(to);
		expect(mail.subject).toBe("Test app picks you");
		expect(mail.text).toBe(`Share ${res.body.shareurl} (10 USD)`);
		expect(mail.html).toContain("#123abc");
		expect(mail.html).not.toContain("<img");
	});
});
