/** @jsxImportSource hono/jsx */
import { DEFAULT_VELOCITY_THRESHOLD, FRAUD_SIGNALS, SIGNAL_WORDS } from "../../fraud/signals";
import { listText, productsText, tiersText } from "../forms";
import { Field, Select, TextArea } from "../layout";

/**
 * The repeated parts of the campaign form: reward rules and social actions
 * as rows (existing ones edited in place or retired, several blank rows to
 * add at once), and the fraud settings. Field names are those forms.ts reads.
 */

type Values = Record<string, any>;

/** Blank rows under the existing ones: several rules or actions are added in one save. */
export const NEW_RULE_ROWS = 3;
export const NEW_ACTION_ROWS = 2;

const EMPTY_RULE: Values = { rewardusertype: "Referrer", eventname: "", reward: "", rewardunit: "USD" };
const EMPTY_ACTION: Values = { socialactionid: "", socialactionname: "", sharemessage: "" };

export const withBlankRules = (rules: Values[] | undefined) => [
	...(rules ?? []),
	...Array.from({ length: NEW_RULE_ROWS }, () => EMPTY_RULE),
];
export const withBlankActions = (actions: Values[] | undefined) => [
	...(actions ?? []),
	...Array.from({ length: NEW_ACTION_ROWS }, () => EMPTY_ACTION),
];

/**
 * A refused campaign form shown again as it was typed: each rule and social
 * action sent goes back to the row it was typed in, blank rows kept between
 * them. The error names rows as typed (forms.ts formErrorText), so "Rule 3
 * reward" must sit on the row labelled Rule 3; packed together, a rule typed
 * in row 3 under a blank row 2 came back as Rule 2.
 */
export function asTyped(campaign: Values, rows: { rules: number[]; actions: number[] }): Values {
	const place = (list: Values[] | undefined, at: number[], empty: Values) => {
		const out: Values[] = Array.from({ length: at.length ? Math.max(...at) + 1 : 0 }, () => empty);
		for (const [k, value] of (list ?? []).entries()) out[at[k] ?? k] = value;
		return out;
	};
	return {
		...campaign,
		rewardrules: place(campaign.rewardrules, rows.rules, EMPTY_RULE),
		socialactions: place(campaign.socialactions, rows.actions, EMPTY_ACTION),
	};
}

/**
 * A list-valued rule field as a comma-separated text field; a stored value
 * that is not a list of words (set through the admin API) rides along hidden
 * and unchanged, so saving the form never loses it.
 */
function ListField({ label, name, value, hint }: { label: string; name: string; value: unknown; hint?: string }) {
	const text = name.endsWith("inclusionsandexclusions") ? productsText(value) : listText(value);
	if (text !== null) return <Field label={label} name={name} value={text} hint={hint ?? "comma-separated, optional"} />;
	return (
		<div>
			<input type="hidden" name={`${name}_kept`} value={JSON.stringify(value)} />
			<p class="muted">
				{label}: a structured value set through the admin API, kept as it is (<code>{JSON.stringify(value).slice(0, 80)}</code>).
			</p>
		</div>
	);
}

export function RuleFields({ rule, i }: { rule: Values; i: number }) {
	const p = `r${i}_`;
	const isNew = rule.ruleid === undefined && !rule.eventname;
	return (
		<fieldset>
			<legend>{isNew ? `New rule (row ${i + 1})` : `Rule ${i + 1}${rule.ruleid !== undefined ? ` (ruleid ${rule.ruleid})` : ""}`}</legend>
			{rule.ruleid !== undefined && <input type="hidden" name={`${p}ruleid`} value={String(rule.ruleid)} />}
			<div class="row">
				<Select
					id={`f-${p}rewardusertype`}
					label="Who is rewarded"
					name={`${p}rewardusertype`}
					value={rule.rewardusertype}
					options={[
						["Referrer", "Referrer"],
						["Friend", "Friend"],
					]}
				/>
				<Field label="Event name" name={`${p}eventname`} value={rule.eventname} hint={isNew ? "leave empty to add none" : undefined} />
				<Field label="Reward" name={`${p}reward`} value={rule.reward} attrs={{ inputmode: "decimal" }} />
				<Field label="Unit" name={`${p}rewardunit`} value={rule.rewardunit} hint="USD, POINTS or %" />
			</div>
			<div class="row">
				<Field
					label="Frequency"
					name={`${p}rewardfrequency`}
					value={rule.rewardfrequency ?? ""}
					hint="times per friend; 0 = unlimited"
					attrs={{ inputmode: "numeric" }}
				/>
				<Field label="Min. transaction" name={`${p}mintranvalue`} value={rule.mintranvalue ?? 0} attrs={{ inputmode: "decimal" }} />
				<Field
					label="Max. reward"
					name={`${p}maxrewardamount`}
					value={rule.maxrewardamount ?? 0}
					hint="0 = no cap"
					attrs={{ inputmode: "decimal" }}
				/>
			</div>
			<div class="row">
				<ListField label="Categories" name={`${p}categories`} value={rule.categories} />
				<ListField
					label="Inclusions and exclusions"
					name={`${p}inclusionsandexclusions`}
					value={rule.inclusionsandexclusions}
					hint="include:SKU-1, exclude:SKU-2"
				/>
			</div>
			<div class="row">
				<Field label="Tiers" name={`${p}tiers`} value={tiersText(rule.tiers)} hint="Referrer rules: count=reward, e.g. 3=20, 5=50" />
				<Field
					label="Recurring months"
					name={`${p}recurringmonths`}
					value={rule.recurringmonths ?? 0}
					hint="0 = no window"
					attrs={{ inputmode: "numeric" }}
				/>
				<Field
					label="Milestone"
					name={`${p}milestone`}
					value={rule.milestone ?? 0}
					hint="Referrer rules: pay once at the N-th friend; 0 = none"
					attrs={{ inputmode: "numeric" }}
				/>
			</div>
			{!isNew && (
				<label>
					<input type="checkbox" name={`${p}remove`} /> Retire this rule (rewards already granted by it stay)
				</label>
			)}
		</fieldset>
	);
}

export function ActionFields({ action, i }: { action: Values; i: number }) {
	const p = `s${i}_`;
	const isNew = !action.socialactionname;
	return (
		<fieldset>
			<legend>{isNew ? `New social action (row ${i + 1})` : `Social action ${i + 1}`}</legend>
			<div class="row">
				<Field label="Action id" name={`${p}socialactionid`} value={action.socialactionid} />
				<Field
					label="Name"
					name={`${p}socialactionname`}
					value={action.socialactionname}
					hint={isNew ? "leave empty to add none" : undefined}
				/>
				<Field label="Display order" name={`${p}displayorder`} value={action.displayorder ?? 0} attrs={{ inputmode: "numeric" }} />
				<Field label="Message type" name={`${p}sharemessagetype`} value={action.sharemessagetype ?? 0} attrs={{ inputmode: "numeric" }} />
			</div>
			<TextArea
				label="Share message"
				name={`${p}sharemessage`}
				value={action.sharemessage}
				rows={2}
				hint="SHARE_URL and SHARE_CODE are filled in"
			/>
			<div class="row">
				<Field label="Share title" name={`${p}sharetitle`} value={action.sharetitle} />
				<Field label="Share image URL" name={`${p}shareimageurl`} value={action.shareimageurl} />
			</div>
			{!isNew && (
				<label>
					<input type="checkbox" name={`${p}remove`} /> Remove this social action
				</label>
			)}
		</fieldset>
	);
}

/** `suspicioussignals` as one checkbox per signal (null, the default, ticks them all) and `velocitythreshold`. */
export function FraudFields({ campaign }: { campaign: Values }) {
	const chosen: string[] | null = Array.isArray(campaign.suspicioussignals) ? campaign.suspicioussignals : null;
	return (
		<fieldset>
			<legend>Signals that make a reward Suspicious</legend>
			<input type="hidden" name="fraudsettings" value="1" />
			<p class="muted">An unticked signal only flags the reward; a ticked one holds it in the review queue.</p>
			{FRAUD_SIGNALS.map((code) => (
				<label>
					<input type="checkbox" name="suspicioussignals" value={code} checked={chosen === null || chosen.includes(code)} />
					<code>{code}</code> <span class="hint">({SIGNAL_WORDS[code]})</span>
				</label>
			))}
			<Field
				label="Velocity threshold"
				name="velocitythreshold"
				type="number"
				value={campaign.velocitythreshold ?? DEFAULT_VELOCITY_THRESHOLD}
				hint="referred sign-ups per referrer and hour above which velocity fires; 0 turns it off"
				attrs={{ min: 0, max: 1_000_000 }}
			/>
		</fieldset>
	);
}
