import type { Lang, MessageKind, Template } from "./templates";

/**
 * The service's own text of each message in each language: what a campaign
 * sends until it saves its own (docs/messages.md). The English text is the
 * one these emails had before templates, so nothing changes for a campaign
 * that never edits them.
 */
export const DEFAULT_TEMPLATES: Record<MessageKind, Record<Lang, Template>> = {
	outreach: {
		en: {
			subject: "{{offertitle}}",
			body: "Hi {{referrername}},\n\n{{offertitle}}\n{{offerdescription}}\n\nShare your link: {{sharelink}}\nYour referral code: {{referralcode}}\n\nMessage to share: {{sharemessage}}",
		},
		fr: {
			subject: "{{offertitle}}",
			body: "Bonjour {{referrername}},\n\n{{offertitle}}\n{{offerdescription}}\n\nPartagez votre lien : {{sharelink}}\nVotre code de parrainage : {{referralcode}}\n\nMessage à partager : {{sharemessage}}",
		},
		de: {
			subject: "{{offertitle}}",
			body: "Hallo {{referrername}},\n\n{{offertitle}}\n{{offerdescription}}\n\nTeile deinen Link: {{sharelink}}\nDein Empfehlungscode: {{referralcode}}\n\nNachricht zum Teilen: {{sharemessage}}",
		},
		es: {
			subject: "{{offertitle}}",
			body: "Hola {{referrername}}:\n\n{{offertitle}}\n{{offerdescription}}\n\nComparte tu enlace: {{sharelink}}\nTu código de referido: {{referralcode}}\n\nMensaje para compartir: {{sharemessage}}",
		},
	},
	reminder: {
		en: {
			subject: "{{referrername}} reminds you: {{offertitle}}",
			body: "Hi {{friendname}},\n\n{{referrername}} invited you and wanted to remind you of the offer:\n{{offertitle}}\n{{offerdescription}}\n\n{{referrername}} says: {{message}}\n\n{{landingurl}}",
		},
		fr: {
			subject: "{{referrername}} vous rappelle : {{offertitle}}",
			body: "Bonjour {{friendname}},\n\n{{referrername}} vous a invité et souhaite vous rappeler l'offre :\n{{offertitle}}\n{{offerdescription}}\n\n{{referrername}} dit : {{message}}\n\n{{landingurl}}",
		},
		de: {
			subject: "{{referrername}} erinnert dich: {{offertitle}}",
			body: "Hallo {{friendname}},\n\n{{referrername}} hat dich eingeladen und möchte dich an das Angebot erinnern:\n{{offertitle}}\n{{offerdescription}}\n\n{{referrername}} schreibt: {{message}}\n\n{{landingurl}}",
		},
		es: {
			subject: "{{referrername}} te recuerda: {{offertitle}}",
			body: "Hola {{friendname}}:\n\n{{referrername}} te invitó y quiere recordarte la oferta:\n{{offertitle}}\n{{offerdescription}}\n\n{{referrername}} dice: {{message}}\n\n{{landingurl}}",
		},
	},
};

/** A referrer whose name is not known, as a reminder's recipient reads it. */
export const SOMEONE: Record<Lang, string> = { en: "Your friend", fr: "Un ami", de: "Ein Freund", es: "Un amigo" };

/** The values a preview fills in (the editor's sample recipient; docs/messages.md). */
export const SAMPLE_VALUES: Record<MessageKind, Record<string, string>> = {
	outreach: {
		referrername: "Ann",
		sharelink: "https://example.com/r/ANN123",
		referralcode: "ANN123",
		reward: "10 USD",
		sharemessage: "Join me: https://example.com/r/ANN123 (code ANN123)",
	},
	reminder: {
		friendname: "Bob",
		referrername: "Ann",
		message: "Don't miss it!",
		sharelink: "https://example.com/r/ANN123",
		referralcode: "ANN123",
		reward: "10 USD",
		landingurl: "https://example.com",
	},
};
