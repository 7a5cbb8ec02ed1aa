import { describe, expect, it } from "vitest";
import { brandedLayout, renderMessage } from "../../src/outbox/branded";
import { invitationEmail, outreachEmail, passwordResetEmail, previewMessage, reminderEmail, sideReward } from "../../src/outbox/emails";
import { DEFAULT_TEMPLATES } from "../../src/outbox/template-defaults";
import { checkTemplate, fill, LANGS, langOfTag, MESSAGE_KINDS, pickTemplate, type Template, VARIABLES } from "../../src/outbox/templates";

/** Issue 34: the text of a campaign's emails, its variables, languages and escaping (docs/messages.md). */

const brand = { name: "Acme", logourl: "https://cdn.example.com/logo.png", accentcolor: "#ff6600" };
const campaign = { offertitle: "Give 10, get 10", offerdescription: "For you & me", campaignname: "Spring" };

describe("template variables", () => {
	it("accepts the kind's variables, with spaces inside the braces", () => {
		expect(
			checkTemplate("reminder", { subject: "{{ referrername }} reminds you", body: "Hi {{friendname}}, {{sharelink}} {{reward}}" }),
		).toEqual([]);
		expect(checkTemplate("outreach", { subject: "{{offertitle}}", body: "{{referrername}}: {{sharelink}} {{referralcode}}" })).toEqual([]);
	});

	it("names an unknown variable and the field it is in, and lists what the kind knows", () => {
		const problems = checkTemplate("outreach", { subject: "Hi", body: "Hello {{firstname}} and {{friendname}}" });
		expect(problems).toHaveLength(1);
		expect(problems[0]).toMatchObject({ field: "body", unknown: ["firstname", "friendname"] });
		expect(problems[0]?.message).toContain("{{referrername}}");
		// {{friendname}} is a reminder's (its recipient), not an outreach's.
		expect(checkTemplate("reminder", { subject: "{{nope}}", body: "{{friendname}}" })[0]).toMatchObject({
			field: "subject",
			unknown: ["nope"],
		});
	});

	it("refuses braces that make no variable, an empty text and an over-long one", () => {
		expect(checkTemplate("outreach", { subject: "x", body: "Link: {{sharelink}" })[0]).toMatchObject({ field: "body" });
		expect(checkTemplate("outreach", { subject: " ", body: "x" })[0]).toMatchObject({ field: "subject", message: "is required" });
		expect(checkTemplate("outreach", { subject: "x", body: "y".repeat(5001) })[0]?.field).toBe("body");
	});

	it("every default, in every language, uses only known variables", () => {
		for (const kind of MESSAGE_KINDS) for (const lang of LANGS) expect(checkTemplate(kind, DEFAULT_TEMPLATES[kind][lang])).toEqual([]);
		expect(Object.keys(VARIABLES.reminder)).toEqual(expect.arrayContaining(["referrername", "friendname", "sharelink", "reward"]));
	});
});

describe("filling a template", () => {
	it("fills values and leaves out a line whose variable has no value", () => {
		const text = "Hi {{friendname}},\n\nJoin {{referrername}}.\n\nNote: {{message}}\n\nBye";
		expect(fill(text, { friendname: "Bob", referrername: "Ann", message: "" })).toBe("Hi Bob,\n\nJoin Ann.\n\nBye");
		expect(fill(text, { friendname: null, referrername: "Ann", message: "Go" })).toBe("Join Ann.\n\nNote: Go\n\nBye");
	});

	it("inserts a value as text: braces or markup in a value are not read again", () => {
		expect(fill("{{friendname}}", { friendname: "{{referrername}}", referrername: "Ann" })).toBe("{{referrername}}");
	});
});

describe("HTML escaping", () => {
	it("escapes a template's text and its values; URLs become links; the text part is kept", () => {
		const template: Template = {
			subject: "<b>{{friendname}}</b>",
			body: "<script>alert(1)</script> Hi {{friendname}}\n\nGo to {{sharelink}}",
		};
		const out = renderMessage(
			template,
			{ friendname: 'Eve "<img src=x onerror=alert(1)>"', sharelink: "https://s.example/r/A?x=1&y=2" },
			brand,
			"en",
		);
		expect(out.html).not.toContain("<script>");
		expect(out.html).not.toContain("<img src=x");
		expect(out.html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
		expect(out.html).toContain('<a href="https://s.example/r/A?x=1&amp;y=2" style="color:#ff6600">');
		expect(out.text).toBe('<script>alert(1)</script> Hi Eve "<img src=x onerror=alert(1)>"\n\nGo to https://s.example/r/A?x=1&y=2');
		expect(out.subject).toBe('<b>Eve "<img src=x onerror=alert(1)>"</b>');
	});

	it("shows the app's https logo and accent colour; anything else is left out", () => {
		const page = brandedLayout("t", "<p>x</p>", brand, "fr");
		expect(page).toContain('<img src="https://cdn.example.com/logo.png" alt="Acme"');
		expect(page).toContain("border-top:4px solid #ff6600");
		expect(page).toContain('<html lang="fr">');
		const hostile = brandedLayout("t", "", { name: "x", logourl: "http://plain.example/l.png", accentcolor: "red;background:url(x)" });
		expect(hostile).not.toContain("<img");
		expect(hostile).not.toContain("red;");
	});
});

describe("languages", () => {
	it("reads the language of a tag; others are null", () => {
		expect(langOfTag("fr-CA")).toBe("fr");
		expect(langOfTag("DE")).toBe("de");
		expect(langOfTag("pt-BR")).toBeNull();
		expect(langOfTag(undefined)).toBeNull();
	});

	it("takes the campaign's text in the recipient's language, else its English one, else the default in that language", () => {
		const fr = { subject: "fr", body: "fr" };
		const en = { subject: "en", body: "en" };
		expect(
			pickTemplate(
				new Map([
					["fr", fr],
					["en", en],
				]),
				DEFAULT_TEMPLATES.outreach,
				"fr",
			),
		).toMatchObject({ template: fr, lang: "fr", custom: true });
		expect(pickTemplate(new Map([["en", en]]), DEFAULT_TEMPLATES.outreach, "de")).toMatchObject({ template: en, lang: "en", custom: true });
		expect(pickTemplate(new Map([["es", en]]), DEFAULT_TEMPLATES.outreach, "de")).toMatchObject({
			template: DEFAULT_TEMPLATES.outreach.de,
			custom: false,
		});
	});

	it("sends the default in the recipient's language, with the name fallback of that language", () => {
		const base = { to: "f@example.com", toName: null, referrerName: null, campaign, message: null, landingurl: null };
		expect(reminderEmail({ ...base, lang: "de" }).subject).toBe("Ein Freund erinnert dich: Give 10, get 10");
		expect(reminderEmail({ ...base, lang: "es" }).text).toContain("Un amigo te invitó");
		expect(reminderEmail(base).subject).toBe("Your friend reminds you: Give 10, get 10");
		const outreach = outreachEmail({
			to: "a@example.com",
			toName: "Zoë",
			campaign,
			mailMessage: null,
			shareurl: "https://s/r/A",
			referralcode: "A",
			lang: "fr",
		});
		expect(outreach.text).toContain("Bonjour Zoë,");
		expect(outreach.text).toContain("Partagez votre lien : https://s/r/A");
		// No Mail message: its line is left out, not sent empty.
		expect(outreach.text).not.toContain("Message à partager");
	});
});

describe("a campaign's template in an email", () => {
	it("fills the campaign's text, the reward of the recipient's side, and the brand", () => {
		const rules = [
			{ rewardusertype: "Referrer" as const, reward: 5, rewardunit: "%" },
			{ rewardusertype: "Friend" as const, reward: 12.5, rewardunit: "EUR" },
		];
		const templates = new Map([
			["en", { subject: "{{referrername}} saved you a seat", body: "Hi {{friendname}}, you get {{reward}}: {{sharelink}}" }],
		] as const);
		const email = reminderEmail({
			to: "f@example.com",
			toName: "Bob",
			referrerName: "Ann",
			campaign,
			message: null,
			landingurl: null,
			templates,
			brand,
			shareurl: "https://s/r/ANN",
			referralcode: "ANN",
			reward: sideReward(rules, "Friend"),
		});
		expect(email.subject).toBe("Ann saved you a seat");
		expect(email.text).toBe("Hi Bob, you get 12.5 EUR: https://s/r/ANN");
		expect(email.html).toContain("https://cdn.example.com/logo.png");
		expect(sideReward(rules, "Referrer")).toBe("5%");
		const preview = previewMessage("reminder", templates.get("en")!, { ...campaign, rewardrules: [] }, brand, "en");
		expect(preview.text).toBe("Hi Bob, you get 10 USD: https://example.com/r/ANN123");
	});
});

describe("every email of an app is branded", () => {
	it("a team invitation carries the app's logo and colour; a password reset (a person's, no app's) the service's look", () => {
		const invitation = invitationEmail({
			to: "m@example.com",
			appname: "Acme",
			role: "viewer",
			url: "https://s/dashboard/invitations/inv_x",
			expiresAt: 0,
			brand,
		});
		expect(invitation.html).toContain('<img src="https://cdn.example.com/logo.png" alt="Acme"');
		expect(invitation.html).toContain('<a href="https://s/dashboard/invitations/inv_x">');
		expect(invitation.html).toContain("#ff6600");
		const reset = passwordResetEmail({ to: "m@example.com", url: "https://s/dashboard/reset/rst_x" });
		expect(reset.html).not.toContain("<img");
		expect(reset.html).not.toContain("#ff6600");
	});
});
