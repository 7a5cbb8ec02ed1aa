/**
 * The campaign builder's model (issue 48): a campaign as the form shows it,
 * every value the text the operator typed (or the stored value as text), so
 * a refused form comes back exactly as typed, tiers and blank rows included.
 * Built from a stored campaign (typedFromStored) or from the posted form
 * (typedFromForm); the form is rendered from it alone (pages/campaign-form.tsx).
 */

import { FRAUD_SIGNALS } from "../fraud/signals";
import { type FormValues, listText, normalizeNewlines, productsText } from "./form-values";

export interface TypedTier {
	fromcount: string;
	reward: string;
}

export interface TypedRule {
	/** The stored rule it edits; "" for a new row. */
	ruleid: string;
	rewardusertype: string;
	eventname: string;
	reward: string;
	rewardunit: string;
	rewardfrequency: string;
	mintranvalue: string;
	maxrewardamount: string;
	categories: string;
	inclusionsandexclusions: string;
	/** A stored list value that is not a list of words (set through the admin API), kept as JSON and sent back unchanged. */
	categoriesKept: string;
	inclusionsKept: string;
	tiers: TypedTier[];
	recurringmonths: string;
	milestone: string;
	remove: boolean;
}

/** A share button: `network` is one of NETWORKS, or "keep" for a stored action of another id (kept as it is). */
export interface TypedShare {
	network: string;
	socialactionid: string;
	socialactionname: string;
	sharemessage: string;
	sharetitle: string;
	shareimageurl: string;
	displayorder: string;
	sharemessagetype: string;
	remove: boolean;
}

export interface TypedCampaign {
	campaignid: string;
	text: Record<(typeof TEXT_FIELDS)[number], string>;
	autoapprove: boolean;
	showleaderboard: boolean;
	/** null: every signal (the default). */
	suspicioussignals: string[] | null;
	rules: TypedRule[];
	shares: TypedShare[];
	/** Ticked confirmations of the form's warnings (past end, no share button). */
	confirmed: string[];
}

/** The networks a share button can be, by name (sharepage/targets.ts reads the id: 1 Facebook, 2 X, 5 Mail, 14 CustomLink). */
export const NETWORKS: { value: string; id: string; name: string; label: string }[] = [
	{ value: "mail", id: "5", name: "Mail", label: "Email" },
	{ value: "link", id: "14", name: "CustomLink", label: "Copy link" },
	{ value: "facebook", id: "1", name: "Facebook", label: "Facebook" },
	{ value: "x", id: "2", name: "Twitter", label: "X (Twitter)" },
];

export const TEXT_FIELDS = [
	"campaignname",
	"offertitle",
	"offerdescription",
	"terms",
	"campaignstartdate",
	"campaignenddate",
	"rewardtype",
	"holddays",
	"distribution",
	"growthhack",
	"currency",
	"velocitythreshold",
	"campaignbgcolor",
	"widgetfont",
	"customdomain",
	"leaderboardnames",
] as const;

/** Blank rows under the stored ones: several rules, tiers or share buttons are added in one save, without script. */
export const BLANK_RULES = 2;
export const BLANK_TIERS = 2;
export const BLANK_SHARES = 2;

const str = (v: unknown) => (v === null || v === undefined ? "" : String(v));

const blankTier = (): TypedTier => ({ fromcount: "", reward: "" });
export const blankRule = (who = "Referrer"): TypedRule => ({
	ruleid: "",
	rewardusertype: who,
	eventname: "",
	reward: "",
	rewardunit: "USD",
	rewardfrequency: "",
	mintranvalue: "",
	maxrewardamount: "",
	categories: "",
	inclusionsandexclusions: "",
	categoriesKept: "",
	inclusionsKept: "",
	tiers: [blankTier(), blankTier()],
	recurringmonths: "",
	milestone: "",
	remove: false,
});
export const blankShare = (network = ""): TypedShare => ({
	network,
	socialactionid: "",
	socialactionname: "",
	sharemessage: "",
	sharetitle: "",
	shareimageurl: "",
	displayorder: "",
	sharemessagetype: "",
	remove: false,
});

/** The network of a stored share button: by its id, else "keep" (shown by its name, sent back unchanged). */
const networkOf = (id: string) => NETWORKS.find((n) => n.id === id.trim())?.value ?? "keep";

/** A stored campaign (admin API shape) as the form shows it, with blank rows to add more. */
export function typedFromStored(campaign: Record<string, any>): TypedCampaign {
	const text = Object.fromEntries(TEXT_FIELDS.map((f) => [f, str(campaign[f])])) as TypedCampaign["text"];
	// datetime-local takes "YYYY-MM-DDTHH:MM" (UTC here: the form says so).
	text.campaignstartdate = text.campaignstartdate.slice(0, 16);
	text.campaignenddate = text.campaignenddate.slice(0, 16);
	const rules: TypedRule[] = (campaign.rewardrules ?? []).map((r: Record<string, any>) => {
		const categories = listText(r.categories);
		const products = productsText(r.inclusionsandexclusions);
		return {
			...blankRule(),
			ruleid: str(r.ruleid),
			rewardusertype: str(r.rewardusertype) || "Referrer",
			eventname: str(r.eventname),
			reward: str(r.reward),
			rewardunit: str(r.rewardunit),
			rewardfrequency: str(r.rewardfrequency),
			mintranvalue: r.mintranvalue ? str(r.mintranvalue) : "",
			maxrewardamount: r.maxrewardamount ? str(r.maxrewardamount) : "",
			categories: categories ?? "",
			inclusionsandexclusions: products ?? "",
			categoriesKept: categories === null ? JSON.stringify(r.categories) : "",
			inclusionsKept: products === null ? JSON.stringify(r.inclusionsandexclusions) : "",
			tiers: [
				...(Array.isArray(r.tiers) ? r.tiers : []).map((t: Record<string, unknown>) => ({
					fromcount: str(t.fromcount),
					reward: str(t.reward),
				})),
				...Array.from({ length: BLANK_TIERS }, blankTier),
			],
			recurringmonths: r.recurringmonths ? str(r.recurringmonths) : "",
			milestone: r.milestone ? str(r.milestone) : "",
		};
	});
	const shares: TypedShare[] = (campaign.socialactions ?? []).map((a: Record<string, any>) => ({
		network: networkOf(str(a.socialactionid)),
		socialactionid: str(a.socialactionid),
		socialactionname: str(a.socialactionname),
		sharemessage: str(a.sharemessage),
		sharetitle: str(a.sharetitle),
		shareimageurl: str(a.shareimageurl),
		displayorder: str(a.displayorder ?? ""),
		sharemessagetype: str(a.sharemessagetype ?? ""),
		remove: false,
	}));
	return {
		campaignid: str(campaign.campaignid),
		text,
		autoapprove: campaign.autoapprove !== false,
		showleaderboard: campaign.showleaderboard === true,
		suspicioussignals: Array.isArray(campaign.suspicioussignals) ? campaign.suspicioussignals : null,
		rules: [...rules, ...Array.from({ length: BLANK_RULES }, (_, i) => blankRule(i === 0 && rules.length === 0 ? "Referrer" : "Friend"))],
		shares: [...shares, ...Array.from({ length: BLANK_SHARES }, () => blankShare())],
		confirmed: [],
	};
}

/** A new campaign: the defaults of the admin API, a reward for each side and two share buttons to start from. */
export function newCampaign(): TypedCampaign {
	const typed = typedFromStored({
		rewardtype: 3,
		holddays: 0,
		distribution: "InstoreCredits",
		growthhack: "SaaS_Referrals",
		currency: "USD",
	});
	typed.text.campaignbgcolor = "#ffffff";
	typed.text.velocitythreshold = "";
	typed.shares = [
		{ ...blankShare("mail"), sharemessage: "Join me and we both get a reward: SHARE_URL" },
		{ ...blankShare("link") },
		blankShare(),
	];
	return typed;
}

const value = (form: FormValues, name: string): string => {
	const v = form[name];
	const first = Array.isArray(v) ? v[0] : v;
	return typeof first === "string" ? normalizeNewlines(first) : "";
};

/** Rows numbered 0.. while one of their fields is in the form. */
export function rowsIn(form: FormValues, prefix: string, keys: string[]): number[] {
	const found: number[] = [];
	for (let i = 0; i < 100 && keys.some((k) => `${prefix}${i}_${k}` in form); i++) found.push(i);
	return found;
}

/** The posted form as typed: every row where it was, blank ones too. */
export function typedFromForm(form: FormValues): TypedCampaign {
	const text = Object.fromEntries(TEXT_FIELDS.map((f) => [f, value(form, f)])) as TypedCampaign["text"];
	const rules = rowsIn(form, "r", ["eventname", "reward"]).map((i): TypedRule => {
		const p = `r${i}_`;
		const tierRows = rowsIn(form, `${p}t`, ["fromcount", "reward"]);
		return {
			ruleid: value(form, `${p}ruleid`),
			rewardusertype: value(form, `${p}rewardusertype`) || "Referrer",
			eventname: value(form, `${p}eventname`),
			reward: value(form, `${p}reward`),
			rewardunit: value(form, `${p}rewardunit`),
			rewardfrequency: value(form, `${p}rewardfrequency`),
			mintranvalue: value(form, `${p}mintranvalue`),
			maxrewardamount: value(form, `${p}maxrewardamount`),
			categories: value(form, `${p}categories`),
			inclusionsandexclusions: value(form, `${p}inclusionsandexclusions`),
			categoriesKept: value(form, `${p}categories_kept`),
			inclusionsKept: value(form, `${p}inclusionsandexclusions_kept`),
			tiers: tierRows.map((k) => ({ fromcount: value(form, `${p}t${k}_fromcount`), reward: value(form, `${p}t${k}_reward`) })),
			recurringmonths: value(form, `${p}recurringmonths`),
			milestone: value(form, `${p}milestone`),
			remove: value(form, `${p}remove`) === "on",
		};
	});
	const shares = rowsIn(form, "s", ["network", "socialactionname"]).map((i): TypedShare => {
		const p = `s${i}_`;
		const id = value(form, `${p}socialactionid`);
		return {
			network: `${p}network` in form ? value(form, `${p}network`) : value(form, `${p}socialactionname`) ? networkOf(id) : "",
			socialactionid: id,
			socialactionname: value(form, `${p}socialactionname`),
			sharemessage: value(form, `${p}sharemessage`),
			sharetitle: value(form, `${p}sharetitle`),
			shareimageurl: value(form, `${p}shareimageurl`),
			displayorder: value(form, `${p}displayorder`),
			sharemessagetype: value(form, `${p}sharemessagetype`),
			remove: value(form, `${p}remove`) === "on",
		};
	});
	const ticked = (Array.isArray(form.suspicioussignals) ? form.suspicioussignals : [form.suspicioussignals]).filter(
		(v): v is string => typeof v === "string",
	);
	return {
		campaignid: "",
		text,
		autoapprove: value(form, "autoapprove") === "on",
		showleaderboard: value(form, "showleaderboard") === "on",
		suspicioussignals: FRAUD_SIGNALS.every((code) => ticked.includes(code)) ? null : ticked,
		rules,
		shares,
		confirmed: (Array.isArray(form.confirm) ? form.confirm : [form.confirm]).filter((v): v is string => typeof v === "string"),
	};
}

/** The rows that are sent: a rule with an event name, a share button with a network, neither ticked for removal. */
export const liveRules = (typed: TypedCampaign) => typed.rules.filter((r) => r.eventname.trim() !== "" && !r.remove);
export const liveShares = (typed: TypedCampaign) => typed.shares.filter((s) => s.network !== "" && !s.remove);

/** A share row's id, name and message type as the admin API takes them. */
export function shareIdentity(share: TypedShare): { socialactionid: string; socialactionname: string; sharemessagetype: string } {
	const network = NETWORKS.find((n) => n.value === share.network);
	if (!network || network.id === share.socialactionid.trim()) {
		// Unchanged (or kept as it was set through the admin API): its own name and message type stay.
		return {
			socialactionid: share.socialactionid || (network?.id ?? ""),
			socialactionname: share.socialactionname || (network?.name ?? ""),
			sharemessagetype: share.sharemessagetype || (network?.id ?? "0"),
		};
	}
	// The message type the spec pairs with each channel is its id (5 Mail, 14 CustomLink, ...).
	return { socialactionid: network.id, socialactionname: network.name, sharemessagetype: network.id };
}
