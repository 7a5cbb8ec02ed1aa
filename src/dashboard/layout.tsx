/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import { currencyExponent } from "../domain/currency";

/** Shared page frame and small components of the dashboard. */

export type Tab = "overview" | "campaigns" | "users" | "review" | "deliveries" | "analytics" | "leaderboard" | "audit" | "team";

export interface PageProps {
	title: string;
	csrf?: string;
	appid?: string;
	appname?: string;
	tab?: Tab;
	ok?: string | null;
	error?: string | null;
	/** Scripts beyond app.js (same origin, deferred): the passkey pages' WebAuthn client. */
	scripts?: string[];
	children?: Child;
}

/** Tabs, with the role a tab needs beyond viewer: routes.tsx removes those a member's role may not use. */
const TABS: [Tab, string, string, string?][] = [
	["overview", "App", ""],
	["campaigns", "Campaigns", "/campaigns"],
	["users", "Users", "/users"],
	["review", "Review queue", "/review"],
	["deliveries", "Deliveries", "/deliveries"],
	["analytics", "Analytics", "/analytics"],
	["leaderboard", "Leaderboard", "/leaderboard"],
	["audit", "Audit log", "/audit"],
	["team", "Team", "/team", "owner"],
];

export function Page(props: PageProps) {
	return (
		<html lang="en">
			<head>
				<meta charset="utf-8" />
				<meta name="viewport" content="width=device-width, initial-scale=1" />
				<title>{`${props.title} · Referral dashboard`}</title>
				<link rel="stylesheet" href="/dashboard/static/app.css" />
			</head>
			<body>
				<a class="skip" href="#main">
					Skip to content
				</a>
				<header class="top">
					<a href="/dashboard">Referral dashboard</a>
					{props.appid && <span>{props.appname ?? props.appid}</span>}
					{/* The person's side, at the right end as people expect: the "Test data" switch (test-mode.ts), Account, Sign out. */}
					{props.csrf && (
						<div class="who">
							<a href="/dashboard/account">Account</a>
							<form method="post" action="/dashboard/logout">
								<input type="hidden" name="_csrf" value={props.csrf} />
								<button type="submit" class="secondary">
									Sign out
								</button>
							</form>
						</div>
					)}
				</header>
				{props.appid && (
					<nav class="tabs" aria-label="App sections">
						{TABS.map(([tab, label, path, needs]) => (
							<a href={`/dashboard/apps/${props.appid}${path}`} aria-current={props.tab === tab ? "page" : undefined} data-needs={needs}>
								{label}
							</a>
						))}
					</nav>
				)}
				<main id="main">
					<h1>{props.title}</h1>
					{props.ok && (
						<p class="flash ok" role="status">
							{props.ok}
						</p>
					)}
					{props.error && (
						<p class="flash error" role="alert">
							{props.error}
						</p>
					)}
					{props.children}
				</main>
				<script src="/dashboard/static/app.js" defer></script>
				{props.scripts?.map((src) => (
					<script src={src} defer></script>
				))}
			</body>
		</html>
	);
}

/**
 * What an error page adds under its message (issue 51): the request id to
 * quote to an operator, who finds it in the log line of the answer
 * (http/request-id.ts), and the link to the code's entry in docs/api.md.
 */
export function ErrorReference(props: { requestid: string; errorcode: string; docs: string }) {
	return (
		<p class="hint">
			Request id <code>{props.requestid}</code> (quote it when you report this) ·{" "}
			<a href={props.docs}>
				what <code>{props.errorcode}</code> means
			</a>
		</p>
	);
}

export const Csrf = ({ token }: { token: string }) => <input type="hidden" name="_csrf" value={token} />;

/** A field's label, with its hint in parentheses. */
function Label(props: { id: string; label: string; hint?: string }) {
	return (
		<label for={props.id}>
			{props.label} {props.hint && <span class="hint">({props.hint})</span>}
		</label>
	);
}

export function Field(props: {
	label: string;
	name: string;
	value?: string | number | null;
	type?: string;
	hint?: string;
	required?: boolean;
	id?: string;
	attrs?: Record<string, string | number | boolean>;
}) {
	const id = props.id ?? `f-${props.name}`;
	return (
		<div>
			<Label id={id} label={props.label} hint={props.hint} />
			<input id={id} name={props.name} type={props.type ?? "text"} value={props.value ?? ""} required={props.required} {...props.attrs} />
		</div>
	);
}

export function TextArea(props: { label: string; name: string; value?: string | null; hint?: string; id?: string; rows?: number }) {
	const id = props.id ?? `f-${props.name}`;
	return (
		<div>
			<Label id={id} label={props.label} hint={props.hint} />
			<textarea id={id} name={props.name} rows={props.rows ?? 3}>
				{props.value ?? ""}
			</textarea>
		</div>
	);
}

export function Select(props: { label: string; name: string; value?: string | null; options: [string, string][]; id?: string }) {
	const id = props.id ?? `f-${props.name}`;
	return (
		<div>
			<label for={id}>{props.label}</label>
			<select id={id} name={props.name}>
				{props.options.map(([value, label]) => (
					<option value={value} selected={value === props.value}>
						{label}
					</option>
				))}
			</select>
		</div>
	);
}

/**
 * An amount in a reward unit, as people read money (issue 48): a currency with its own decimals (10.00 USD,
 * 500 JPY, 1.500 KWD), any other unit (points) with two decimals dropped when they are zero.
 */
export function money(amount: number | string, unit: string): string {
	const n = Number(amount);
	if (!Number.isFinite(n)) return `${amount} ${unit}`;
	const digits = /^[A-Za-z]{3}$/.test(unit) ? currencyExponent(unit) : Number.isInteger(n) ? 0 : 2;
	return `${n.toFixed(digits)} ${unit}`;
}

export const Status = ({ value }: { value: string }) => <span class={`status ${value}`}>{value}</span>;

/** A table that scrolls sideways on a phone instead of breaking the page. */
export function Table(props: { caption: string; head: string[]; numeric?: number[]; children?: Child; empty?: boolean }) {
	return (
		// Focusable: a table wider than a phone scrolls sideways, and the keyboard must reach it too (axe: scrollable-region-focusable).
		<section class="table-wrap" tabindex={0} aria-label={props.caption}>
			<table>
				<caption class="skip">{props.caption}</caption>
				<thead>
					<tr>
						{props.head.map((h, i) => (
							<th scope="col" class={props.numeric?.includes(i) ? "num" : undefined}>
								{h}
							</th>
						))}
					</tr>
				</thead>
				<tbody>
					{props.children}
					{props.empty && (
						<tr>
							<td colspan={props.head.length} class="muted">
								Nothing here yet.
							</td>
						</tr>
					)}
				</tbody>
			</table>
		</section>
	);
}

/** "Next page" link carrying the cursor, keeping the other query parameters. */
export function Pager(props: { url: string; param?: string; next: string | null; label?: string }) {
	if (!props.next) return null;
	const url = new URL(props.url);
	url.searchParams.set(props.param ?? "cursor", props.next);
	return (
		<p class="pager">
			<a href={`${url.pathname}${url.search}`}>{props.label ?? "Next page →"}</a>
		</p>
	);
}

export const day = (iso: string | null | undefined) => (iso ? iso.slice(0, 10) : "");
export const dateTime = (iso: string | null | undefined) => (iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "");
