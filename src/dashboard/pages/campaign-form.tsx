/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import type { FieldProblem, Warning } from "../campaign-check";
import type { TypedCampaign } from "../campaign-typed";
import { Csrf } from "../layout";
import { READ_ONLY_NOTE } from "../role";
import { Area, Choice, Input, ProblemSummary, problemsOf, WarningBox } from "./campaign-fields";
import { EventList, FraudFields, RuleRow, ShareRow, UnitList } from "./campaign-rows";

/**
 * The campaign builder (issue 48): one form in the sections a marketer
 * recognises (Offer, Who gets what, Rules, Sharing, Look), every problem at
 * once on its field with a summary linking to each, the warnings to confirm,
 * and the preview beside it (campaign-preview.tsx). Without script the
 * Preview button posts the form to the preview route; app.js posts it on
 * every change and swaps in the preview section (script.ts), so it is live.
 */

/** How the public board names referrers (domain/display-name.ts); emails and hidden characters are never shown in any. */
const NAME_STYLES: [string, string][] = [
	["firstinitial", "First name and initial (Ann L.)"],
	["initials", "Initials (A. L.)"],
	["numbered", "Referrer #n (by rank)"],
];

/** `rewardtype` as the rules engine reads it (rewards/rules.ts rewardTypeAllows): 1 pays the referrer, 2 the friend. */
const REWARD_TYPES: [string, string][] = [
	["0", "Nobody for now (none: rewards paused)"],
	["1", "Only the referrer (referrer only)"],
	["2", "Only the friend (friend only)"],
	["3", "The referrer and the friend (both)"],
];

const DISTRIBUTIONS: [string, string][] = [
	["InstoreCredits", "As credit in your app (in-store credits)"],
	["Coupon", "As a coupon code from the pool"],
	["Stripe", "Into the customer's Stripe balance"],
];

export const SECTIONS: [string, string][] = [
	["offer", "Offer"],
	["who", "Who gets what"],
	["rules", "Rules"],
	["sharing", "Sharing"],
	["look", "Look"],
];

function Section(props: { id: string; title: string; intro?: string; children: Child }) {
	return (
		<section class="builder-section" aria-labelledby={`sec-${props.id}`}>
			<h2 id={`sec-${props.id}`}>{props.title}</h2>
			{props.intro && <p class="muted">{props.intro}</p>}
			{props.children}
		</section>
	);
}

export interface BuilderProps {
	action: string;
	preview: string;
	typed: TypedCampaign;
	csrf: string;
	/** The save button's words; null (a role below manager) shows the form without a way to save. */
	submit: string | null;
	problems?: FieldProblem[];
	/** Problems the admin API named that no field shows. */
	other?: string[];
	warnings?: Warning[];
}

export function CampaignForm(props: BuilderProps) {
	const { typed } = props;
	const t = typed.text;
	const problems = problemsOf(props.problems ?? []);
	return (
		<form class="grid builder" method="post" action={props.action} novalidate data-live-preview={props.preview} aria-label="Campaign">
			<Csrf token={props.csrf} />
			<ProblemSummary problems={props.problems ?? []} other={props.other ?? []} />
			<WarningBox warnings={props.warnings ?? []} />
			<nav class="sections" aria-label="Sections of the campaign">
				{SECTIONS.map(([id, title]) => (
					<a href={`#sec-${id}`}>{title}</a>
				))}
			</nav>
			<Section id="offer" title="Offer" intro="What people see on the share page.">
				<Input label="Campaign name" name="campaignname" value={t.campaignname} problems={problems} hint="only your team sees it" />
				<Input label="Offer title" name="offertitle" value={t.offertitle} problems={problems} hint="e.g. Give $10, get $10" />
				<Area label="Offer description" name="offerdescription" value={t.offerdescription} problems={problems} />
				<Area label="Terms" name="terms" value={t.terms} problems={problems} rows={4} />
				<div class="two">
					<Input
						label="Starts (UTC)"
						name="campaignstartdate"
						type="datetime-local"
						value={t.campaignstartdate}
						problems={problems}
						hint="empty: now"
					/>
					<Input
						label="Ends (UTC)"
						name="campaignenddate"
						type="datetime-local"
						value={t.campaignenddate}
						problems={problems}
						hint="empty: no end; events after it earn nothing"
					/>
				</div>
			</Section>
			<Section id="who" title="Who gets what" intro="Each reward reads as a sentence; leave a new row's event empty to add none.">
				<UnitList />
				<EventList />
				{typed.rules.map((rule, i) => (
					<RuleRow rule={rule} i={i} problems={problems} />
				))}
			</Section>
			<Section id="rules" title="Rules">
				<Choice label="Who can be rewarded" name="rewardtype" value={t.rewardtype || "3"} options={REWARD_TYPES} problems={problems} />
				<div class="two">
					<Input
						label="Hold days"
						name="holddays"
						value={t.holddays}
						problems={problems}
						hint="days a reward waits before it can be approved; 0 to 365"
						attrs={{ inputmode: "numeric" }}
					/>
					<Choice
						label="Rewards are paid"
						name="distribution"
						value={t.distribution || "InstoreCredits"}
						options={DISTRIBUTIONS}
						problems={problems}
					/>
				</div>
				<label>
					<input type="checkbox" name="autoapprove" checked={typed.autoapprove} /> Approve rewards automatically after the hold (Suspicious
					ones wait for a person)
				</label>
				<details
					id="fraud-settings"
					open={[...problems.keys()].some((k) => ["velocitythreshold", "currency", "growthhack"].includes(k)) || undefined}
				>
					<summary>Fraud signals, currency and growth hack</summary>
					<FraudFields signals={typed.suspicioussignals} velocity={t.velocitythreshold} problems={problems} />
					<div class="two">
						<Input label="Currency of % rewards" name="currency" value={t.currency} problems={problems} hint="e.g. USD" />
						<Input label="Growth hack" name="growthhack" value={t.growthhack} problems={problems} hint="the name your app sends" />
					</div>
				</details>
			</Section>
			<Section id="sharing" title="Sharing" intro="The buttons on the share page, in their position order.">
				{typed.shares.map((share, i) => (
					<ShareRow share={share} i={i} problems={problems} />
				))}
				<label>
					<input type="checkbox" name="showleaderboard" checked={typed.showleaderboard} /> Show each user's rank among this month's
					referrers on the share page
				</label>
				<Choice
					label="Names on the leaderboard"
					name="leaderboardnames"
					value={t.leaderboardnames || "firstinitial"}
					options={NAME_STYLES}
					problems={problems}
				/>
				<Input
					label="Custom share domain"
					name="customdomain"
					value={t.customdomain}
					problems={problems}
					hint="optional, e.g. refer.example.com"
				/>
			</Section>
			<Section id="look" title="Look">
				<div class="two">
					<Input label="Background colour" name="campaignbgcolor" type="color" value={t.campaignbgcolor || "#ffffff"} problems={problems} />
					<Input label="Font" name="widgetfont" value={t.widgetfont} problems={problems} hint="a font installed on the reader's device" />
				</div>
			</Section>
			<div class="row actions">
				{/* First in the form: Enter in a field previews, it never saves. */}
				<button type="submit" class="secondary" formaction={props.preview} formnovalidate>
					Preview
				</button>
				{props.submit ? (
					<button type="submit" name="save" value="1">
						{props.submit}
					</button>
				) : (
					<p class="muted">{READ_ONLY_NOTE}</p>
				)}
			</div>
		</form>
	);
}
