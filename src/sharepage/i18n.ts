import type { ShareTarget } from "./targets";

/**
 * The referral page's own words in the languages it speaks. The campaign's
 * texts (offer, terms, share messages) stay as the campaign wrote them; only
 * the page's labels follow the browser's `Accept-Language`.
 */
export type Lang = "en" | "fr" | "de" | "es";

export interface PageText {
	title: string;
	link: string;
	copy: string;
	copied: string;
	copyHint: string;
	code: string;
	share: string;
	channels: Record<ShareTarget["kind"], string>;
	progress: string;
	joined: string;
	converted: string;
	earned: (unit: string) => string;
	pending: (unit: string) => string;
	available: (unit: string) => string;
	noRewards: string;
	/** The user's place among this month's referrers (campaign `showleaderboard`). */
	rank: (rank: number) => string;
	unranked: string;
	beyond: (top: number) => string;
	terms: string;
}

const TEXT: Record<Lang, PageText> = {
	en: {
		title: "Invite your friends",
		link: "Your share link",
		copy: "Copy link",
		copied: "Link copied",
		copyHint: "Press Ctrl+C to copy",
		code: "Your code:",
		share: "Share",
		channels: { facebook: "Share on Facebook", x: "Post on X", mail: "Send by email", link: "Open your link" },
		progress: "Your referrals",
		joined: "Friends joined",
		converted: "Friends converted",
		earned: (u) => `Rewards earned (${u})`,
		pending: (u) => `Pending (${u})`,
		available: (u) => `Available (${u})`,
		noRewards: "No rewards yet: share your link to earn some.",
		rank: (n) => `You are #${n} of this month's referrers`,
		unranked: "Not on this month's leaderboard yet: a friend who converts puts you on it.",
		beyond: (n) => `Not in this month's top ${n} referrers yet: keep sharing.`,
		terms: "Terms and conditions",
	},
	fr: {
		title: "Invitez vos amis",
		link: "Votre lien de parrainage",
		copy: "Copier le lien",
		copied: "Lien copié",
		copyHint: "Appuyez sur Ctrl+C pour copier",
		code: "Votre code :",
		share: "Partager",
		channels: { facebook: "Partager sur Facebook", x: "Publier sur X", mail: "Envoyer par e-mail", link: "Ouvrir votre lien" },
		progress: "Vos parrainages",
		joined: "Amis inscrits",
		converted: "Amis convertis",
		earned: (u) => `Récompenses gagnées (${u})`,
		pending: (u) => `En attente (${u})`,
		available: (u) => `Disponible (${u})`,
		noRewards: "Pas encore de récompense : partagez votre lien pour en gagner.",
		rank: (n) => `Vous êtes n° ${n} des parrains ce mois-ci`,
		unranked: "Pas encore au classement de ce mois : un ami converti vous y fera entrer.",
		beyond: (n) => `Pas encore parmi les ${n} premiers parrains du mois : continuez à partager.`,
		terms: "Conditions générales",
	},
	de: {
		title: "Lade deine Freunde ein",
		link: "Dein Empfehlungslink",
		copy: "Link kopieren",
		copied: "Link kopiert",
		copyHint: "Zum Kopieren Strg+C drücken",
		code: "Dein Code:",
		share: "Teilen",
		channels: { facebook: "Auf Facebook teilen", x: "Auf X posten", mail: "Per E-Mail senden", link: "Deinen Link öffnen" },
		progress: "Deine Empfehlungen",
		joined: "Beigetretene Freunde",
		converted: "Konvertierte Freunde",
		earned: (u) => `Verdiente Prämien (${u})`,
		pending: (u) => `Ausstehend (${u})`,
		available: (u) => `Verfügbar (${u})`,
		noRewards: "Noch keine Prämien: teile deinen Link, um welche zu verdienen.",
		rank: (n) => `Du bist #${n} der Empfehlenden in diesem Monat`,
		unranked: "Noch nicht in der Rangliste dieses Monats: Ein konvertierter Freund bringt dich hinein.",
		beyond: (n) => `Noch nicht unter den besten ${n} Empfehlenden des Monats: teile weiter.`,
		terms: "Teilnahmebedingungen",
	},
	es: {
		title: "Invita a tus amigos",
		link: "Tu enlace para compartir",
		copy: "Copiar enlace",
		copied: "Enlace copiado",
		copyHint: "Pulsa Ctrl+C para copiar",
		code: "Tu código:",
		share: "Compartir",
		channels: { facebook: "Compartir en Facebook", x: "Publicar en X", mail: "Enviar por correo", link: "Abrir tu enlace" },
		progress: "Tus referidos",
		joined: "Amigos registrados",
		converted: "Amigos convertidos",
		earned: (u) => `Recompensas ganadas (${u})`,
		pending: (u) => `Pendiente (${u})`,
		available: (u) => `Disponible (${u})`,
		noRewards: "Aún no hay recompensas: comparte tu enlace para ganarlas.",
		rank: (n) => `Eres el n.º ${n} de los referentes de este mes`,
		unranked: "Aún no estás en la clasificación de este mes: un amigo que convierta te pondrá en ella.",
		beyond: (n) => `Aún no estás entre los ${n} primeros referentes del mes: sigue compartiendo.`,
		terms: "Términos y condiciones",
	},
};

export const textFor = (lang: Lang): PageText => TEXT[lang];

const isLang = (tag: string): tag is Lang => Object.hasOwn(TEXT, tag);

/**
 * The language of `Accept-Language` (RFC 9110 §12.5.4): the supported
 * language with the highest q-value, ties in the header's order; a primary
 * tag matches its regional variants (`fr-CA` is `fr`); English by default.
 */
export function negotiateLang(header: string | null | undefined): Lang {
	if (!header) return "en";
	let best: { lang: Lang; q: number } | null = null;
	for (const part of header.split(",").slice(0, 20)) {
		const [range = "", ...params] = part.trim().split(";");
		const primary = range.trim().toLowerCase().split("-")[0] ?? "";
		const qParam = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
		const q = qParam ? Number(qParam.slice(2)) : 1;
		if (!Number.isFinite(q) || q <= 0 || !isLang(primary)) continue;
		if (!best || q > best.q) best = { lang: primary, q };
	}
	return best?.lang ?? "en";
}
