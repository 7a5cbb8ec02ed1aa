/** @jsxImportSource hono/jsx */
import { DEFAULT_VELOCITY_THRESHOLD, FRAUD_SIGNALS, SIGNAL_WORDS } from "../../fraud/signals";
import { NETWORKS, type TypedRule, type TypedShare } from "../campaign-typed";
import { ruleSentence } from "../rule-words";
import { Area, Choice, Input, type Problems } from "./campaign-fields";

/**
 * The repeated parts of the campaign builder (issue 48): each reward rule a
 * row read as a sentence (who gets what, when), its tiers as rows (from
 * friend N: reward), and each share button a network chosen by name. Field
 * names are those forms.ts and campaign-typed.ts read.
 */

/** Units offered while typing; any currency code or points name is accepted. */
export const UnitList = () => (
	<datalist id="units">
		{["USD", "EUR", "GBP", "CAD", "AUD", "POINTS", "%"].map((u) => (
			<option value={u} />
		))}
	</datalist>
);

/** Event names offered while typing: Signup and the payment event most apps send. */
export const EventList = () => (
	<datalist id="events">
		{["Signup", "Transaction", "Purchase"].map((u) => (
			<option value={u} />
		))}
	</datalist>
);

export function RuleRow({ rule, i, problems }: { rule: TypedRule; i: number; problems: Problems }) {
	const p = `r${i}_`;
	const isNew = rule.ruleid === "";
	const sentence = ruleSentence(rule);
	const open = (names: string[]) => names.some((n) => problems.has(`${p}${n}`));
	const tiersOpen =
		rule.tiers.some((t) => t.fromcount !== "" || t.reward !== "") || [...problems.keys()].some((k) => k.startsWith(`${p}t`));
	const conditions = [
		"rewardfrequency",
		"mintranvalue",
		"maxrewardamount",
		"categories",
		"inclusionsandexclusions",
		"recurringmonths",
		"milestone",
	];
	const conditionsOpen = open(conditions) || conditions.some((n) => (rule as unknown as Record<string, string>)[n] !== "");
	return (
		<fieldset class="rule">
			<legend>{isNew ? `New reward (row ${i + 1})` : `Reward ${i + 1}`}</legend>
			{!isNew && <input type="hidden" name={`${p}ruleid`} value={rule.ruleid} />}
			<p class="sentence" id={`${p}sentence`}>
				{sentence ?? (isNew ? "Empty: name an event to add this reward." : "")}
			</p>
			<div class="row words">
				<Choice
					label="Who gets it"
					name={`${p}rewardusertype`}
					value={rule.rewardusertype}
					options={[
						["Referrer", "The referrer"],
						["Friend", "The friend"],
					]}
					problems={problems}
				/>
				<Input label="gets" name={`${p}reward`} value={rule.reward} problems={problems} attrs={{ inputmode: "decimal" }} />
				<Input
					label="in"
					name={`${p}rewardunit`}
					value={rule.rewardunit}
					problems={problems}
					attrs={{ list: "units" }}
					hint="USD, POINTS or %"
				/>
				<Input
					label="when a friend has the event"
					name={`${p}eventname`}
					value={rule.eventname}
					problems={problems}
					attrs={{ list: "events" }}
					hint="e.g. Signup or Transaction"
				/>
			</div>
			<details open={tiersOpen || undefined} id={`${p}tiers`}>
				<summary>More for more friends (tiers, for the referrer)</summary>
				{rule.tiers.map((tier, k) => (
					<div class="row">
						<Input
							label={`Tier ${k + 1}: from friend number`}
							name={`${p}t${k}_fromcount`}
							value={tier.fromcount}
							problems={problems}
							attrs={{ inputmode: "numeric" }}
						/>
						<Input
							label={`Tier ${k + 1}: the reward is`}
							name={`${p}t${k}_reward`}
							value={tier.reward}
							problems={problems}
							attrs={{ inputmode: "decimal" }}
						/>
					</div>
				))}
			</details>
			<details open={conditionsOpen || undefined} id={`${p}conditions`}>
				<summary>Conditions (how often, minimum payment, products, time window, milestone)</summary>
				<div class="row">
					<Input
						label="Times per friend"
						name={`${p}rewardfrequency`}
						value={rule.rewardfrequency}
						problems={problems}
						hint="0: every time; empty: once for Signup, else every time"
						attrs={{ inputmode: "numeric" }}
					/>
					<Input
						label="Minimum payment"
						name={`${p}mintranvalue`}
						value={rule.mintranvalue}
						problems={problems}
						attrs={{ inputmode: "decimal" }}
					/>
					<Input
						label="Cap for a % reward"
						name={`${p}maxrewardamount`}
						value={rule.maxrewardamount}
						problems={problems}
						hint="0 or empty: no cap"
						attrs={{ inputmode: "decimal" }}
					/>
				</div>
				<div class="row">
					<ListInput
						label="Only these categories"
						name={`${p}categories`}
						text={rule.categories}
						kept={rule.categoriesKept}
						problems={problems}
					/>
					<ListInput
						label="Products"
						name={`${p}inclusionsandexclusions`}
						text={rule.inclusionsandexclusions}
						kept={rule.inclusionsKept}
						problems={problems}
						hint="include:SKU-1, exclude:SKU-2"
					/>
				</div>
				<div class="row">
					<Input
						label="Months after the friend's first"
						name={`${p}recurringmonths`}
						value={rule.recurringmonths}
						problems={problems}
						hint="0 or empty: no window"
						attrs={{ inputmode: "numeric" }}
					/>
					<Input
						label="Milestone: only at friend number"
						name={`${p}milestone`}
						value={rule.milestone}
						problems={problems}
						hint="referrer, fixed amount; 0 or empty: none"
						attrs={{ inputmode: "numeric" }}
					/>
				</div>
			</details>
			{!isNew && (
				<label>
					<input type="checkbox" name={`${p}remove`} checked={rule.remove} /> Retire this reward (rewards already granted by it stay)
				</label>
			)}
		</fieldset>
	);
}

/** A list field as comma-separated words; a structured value set through the admin API rides along hidden and unchanged. */
function ListInput(props: { label: string; name: string; text: string; kept: string; problems: Problems; hint?: string }) {
	if (!props.kept) {
		return (
			<Input
				label={props.label}
				name={props.name}
				value={props.text}
				problems={props.problems}
				hint={props.hint ?? "comma-separated, optional"}
			/>
		);
	}
	return (
		<div>
			<input type="hidden" name={`${props.name}_kept`} value={props.kept} />
			<p class="muted">
				{props.label}: a structured value set through the admin API, kept as it is (<code>{props.kept.slice(0, 80)}</code>).
			</p>
		</div>
	);
}

export function ShareRow({ share, i, problems }: { share: TypedShare; i: number; problems: Problems }) {
	const p = `s${i}_`;
	const options: [string, string][] = [["", "No button"], ...NETWORKS.map((n): [string, string] => [n.value, n.label])];
	if (share.network === "keep") options.push(["keep", `${share.socialactionname || "Other"} (set through the admin API)`]);
	return (
		<fieldset class="share">
			<legend>{`Share button ${i + 1}`}</legend>
			<input type="hidden" name={`${p}socialactionid`} value={share.socialactionid} />
			<input type="hidden" name={`${p}socialactionname`} value={share.socialactionname} />
			<input type="hidden" name={`${p}sharemessagetype`} value={share.sharemessagetype} />
			<div class="row">
				<Choice label="Network" name={`${p}network`} value={share.network} options={options} problems={problems} />
				<Input
					label="Position"
					name={`${p}displayorder`}
					value={share.displayorder}
					problems={problems}
					hint="lower comes first"
					attrs={{ inputmode: "numeric" }}
				/>
			</div>
			<Area
				label="Message"
				name={`${p}sharemessage`}
				value={share.sharemessage}
				problems={problems}
				rows={2}
				hint="SHARE_URL and SHARE_CODE become the user's link and code"
			/>
			<details>
				<summary>Email subject and image</summary>
				<div class="row">
					<Input label="Email subject" name={`${p}sharetitle`} value={share.sharetitle} problems={problems} />
					<Input label="Image address" name={`${p}shareimageurl`} value={share.shareimageurl} problems={problems} />
				</div>
			</details>
			{share.socialactionid !== "" && (
				<label>
					<input type="checkbox" name={`${p}remove`} checked={share.remove} /> Remove this button
				</label>
			)}
		</fieldset>
	);
}

/** `suspicioussignals` as one checkbox per signal (null, the default, ticks them all) and `velocitythreshold`. */
export function FraudFields({ signals, velocity, problems }: { signals: string[] | null; velocity: string; problems: Problems }) {
	return (
		<fieldset>
			<legend>Signals that hold a reward for review</legend>
			<input type="hidden" name="fraudsettings" value="1" />
			<p class="muted">A ticked signal holds the reward in the review queue as Suspicious; an unticked one only notes it.</p>
			{FRAUD_SIGNALS.map((code) => (
				<label>
					<input type="checkbox" name="suspicioussignals" value={code} checked={signals === null || signals.includes(code)} />
					{SIGNAL_WORDS[code]} <span class="hint">({code})</span>
				</label>
			))}
			<Input
				label="Velocity: sign-ups per referrer and hour"
				name="velocitythreshold"
				type="number"
				value={velocity === "" ? String(DEFAULT_VELOCITY_THRESHOLD) : velocity}
				problems={problems}
				hint="above it, velocity fires; 0 turns it off"
				attrs={{ min: 0, max: 1_000_000 }}
			/>
		</fieldset>
	);
}
