/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import type { FieldProblem, Warning } from "../campaign-check";

/**
 * The campaign builder's fields (issue 48): each shows its own problem
 * under it, marked for assistive technology (`aria-invalid`, and
 * `aria-describedby` naming the message and the hint), and the summary at
 * the top links to every problem's field.
 */

export type Problems = Map<string, string>;

export const problemsOf = (list: FieldProblem[]): Problems => {
	const map: Problems = new Map();
	for (const p of list) if (!map.has(p.field)) map.set(p.field, p.message);
	return map;
};

const idOf = (name: string) => `f-${name}`;

/** The attributes that tie a control to its hint and its problem. */
function described(name: string, problems: Problems, hint?: string) {
	const id = idOf(name);
	const ids = [hint ? `${id}-hint` : "", problems.has(name) ? `${id}-error` : ""].filter(Boolean).join(" ");
	return { id, "aria-invalid": problems.has(name) ? "true" : undefined, "aria-describedby": ids || undefined };
}

function Around(props: { name: string; label: string; hint?: string; problems: Problems; children: Child; class?: string }) {
	const id = idOf(props.name);
	const problem = props.problems.get(props.name);
	return (
		<div class={`${props.class ?? ""}${problem ? " invalid" : ""}`.trim() || undefined}>
			<label for={id}>{props.label}</label>
			{props.hint && (
				<span class="hint" id={`${id}-hint`}>
					{props.hint}
				</span>
			)}
			{props.children}
			{problem && (
				<p class="field-error" id={`${id}-error`}>
					{problem}
				</p>
			)}
		</div>
	);
}

export function Input(props: {
	label: string;
	name: string;
	value: string;
	problems: Problems;
	hint?: string;
	type?: string;
	class?: string;
	attrs?: Record<string, string | number | boolean>;
}) {
	return (
		<Around name={props.name} label={props.label} hint={props.hint} problems={props.problems} class={props.class}>
			<input
				name={props.name}
				type={props.type ?? "text"}
				value={props.value}
				{...described(props.name, props.problems, props.hint)}
				{...props.attrs}
			/>
		</Around>
	);
}

export function Area(props: { label: string; name: string; value: string; problems: Problems; hint?: string; rows?: number }) {
	return (
		<Around name={props.name} label={props.label} hint={props.hint} problems={props.problems}>
			<textarea name={props.name} rows={props.rows ?? 3} {...described(props.name, props.problems, props.hint)}>
				{props.value}
			</textarea>
		</Around>
	);
}

export function Choice(props: {
	label: string;
	name: string;
	value: string;
	options: [string, string][];
	problems: Problems;
	hint?: string;
	class?: string;
}) {
	return (
		<Around name={props.name} label={props.label} hint={props.hint} problems={props.problems} class={props.class}>
			<select name={props.name} {...described(props.name, props.problems, props.hint)}>
				{props.options.map(([value, label]) => (
					<option value={value} selected={value === props.value}>
						{label}
					</option>
				))}
			</select>
		</Around>
	);
}

/** Every problem at the top, each a link to its field; focused first by app.js is not needed: it is the page's alert. */
export function ProblemSummary({ problems, other }: { problems: FieldProblem[]; other: string[] }) {
	if (problems.length === 0 && other.length === 0) return null;
	const count = problems.length + other.length;
	return (
		<div class="flash error summary" role="alert" id="problem-summary" tabindex={-1} aria-labelledby="problem-summary-title">
			<h2 id="problem-summary-title">{count === 1 ? "One thing to fix before saving" : `${count} things to fix before saving`}</h2>
			<ul>
				{problems.map((p) => (
					<li>
						<a href={`#${idOf(p.field)}`}>{p.message}</a>
					</li>
				))}
				{other.map((m) => (
					<li>{m}</li>
				))}
			</ul>
		</div>
	);
}

/** The warnings to confirm: ticking one and saving again saves anyway. */
export function WarningBox({ warnings }: { warnings: Warning[] }) {
	if (warnings.length === 0) return null;
	return (
		<div class="flash warn" role="alert" id="warnings">
			<h2>Before saving</h2>
			{warnings.map((w) => (
				<p data-warning={w.id}>
					{w.message}{" "}
					<label class="inline">
						<input type="checkbox" name="confirm" value={w.id} /> Save anyway
					</label>
				</p>
			))}
		</div>
	);
}
