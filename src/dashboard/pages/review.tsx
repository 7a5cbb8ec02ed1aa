/** @jsxImportSource hono/jsx */
import { dashboardPathOr } from "../../domain/redirect";
import { FRAUD_SIGNALS, SIGNAL_WORDS } from "../../fraud/signals";
import { must } from "../api";
import { back, type Dash, flash } from "../context";
import { normalizeNewlines } from "../forms";
import { Csrf, dateTime, Field, money, Page, Pager, Select, Status, Table, TextArea } from "../layout";
import { mayAct, READ_ONLY_NOTE, roleIn } from "../role";
import { loadApp } from "./apps";

type Person = { userkey: string; email: string | null; name: string | null } | null;
type Values = Record<string, any>;

/** A person of the queue: email and name, linked to the user page (a reward without a known referrer shows a dash). */
function PersonCell({ appid, person }: { appid: string; person: Person }) {
	if (!person) return <td class="muted">—</td>;
	return (
		<td>
			<a href={`/dashboard/apps/${appid}/users/${person.userkey}`}>{person.email ?? person.userkey}</a>
			{person.name && <div class="muted">{person.name}</div>}
		</td>
	);
}

/** What a signal code means, in words; a code this deploy does not know shows only its code. */
function signalWords(code: string): string {
	for (const known of FRAUD_SIGNALS) if (known === code) return SIGNAL_WORDS[known];
	return "";
}

function Signals({ codes }: { codes: string[] }) {
	if (codes.length === 0) return <span class="muted">none</span>;
	return (
		<ul class="signals">
			{codes.map((code) => (
				<li>
					<code>{code}</code>: {signalWords(code)}
				</li>
			))}
		</ul>
	);
}

const REVIEW_HEAD = ["Pick", "Friend", "Referrer", "Paid to", "Event", "Amount", "Status", "Fraud signals", "Campaign", "Created"];

function ReviewRows({ appid, rewards, names }: { appid: string; rewards: Values[]; names: Map<number, string> }) {
	return (
		<>
			{rewards.map((r) => (
				<tr data-reward={r.rewarddtlid}>
					<td>
						<input
							type="checkbox"
							name="ids"
							value={r.rewarddtlid}
							id={`pick-${r.rewarddtlid}`}
							aria-label={`Select the ${r.usertype.toLowerCase()} reward of ${r.friend?.email ?? r.userkey} (${r.rewarddtlid})`}
						/>
					</td>
					<PersonCell appid={appid} person={r.friend} />
					<PersonCell appid={appid} person={r.referrer} />
					<td>{r.usertype}</td>
					<td>{r.eventname}</td>
					<td class="num">
						<a
							href={`/dashboard/apps/${appid}/rewards/${encodeURIComponent(r.rewarddtlid)}`}
							title="The reward's page: order id, event, payment, history"
						>
							{money(r.reward, r.rewardunit)}
						</a>
					</td>
					<td>
						<Status value={r.rewardstatus} />
					</td>
					<td>
						<Signals codes={r.fraudsignals ?? []} />
						{r.comment && <div class="muted">{r.comment}</div>}
					</td>
					<td>{names.get(r.campaignid) ?? r.campaignid}</td>
					<td>{dateTime(r.createdat)}</td>
				</tr>
			))}
		</>
	);
}

/**
 * The queue's status filter (issue 48): Suspicious first and by default, the rewards a person must decide; Under
 * review, those that approve themselves when their hold ends; both; or every status.
 */
const STATUS_FILTERS: [string, string, string][] = [
	["Suspicious", "Suspicious: needs a person", "Suspicious"],
	["UnderReview", "Under review: approves itself after its hold", "UnderReview"],
	["waiting", "Both: everything waiting", "Suspicious,UnderReview"],
	["all", "Every status", ""],
];
const CAPTIONS: Record<string, string> = {
	Suspicious: "Suspicious rewards: each needs a person to approve or reject it",
	UnderReview: "Rewards under review: each approves itself when its hold ends, unless someone decides first",
	waiting: "Rewards waiting: suspicious and under review",
	all: "Rewards of every status",
};

/** Review queue: rewards by status (Suspicious by default), campaign and date; approve or reject one or many with a comment. */

/** Approve and reject, with the comment kept on the rewards: a reviewer's (or higher) actions. */
function ReviewActions() {
	return (
		<>
			<TextArea label="Comment" name="message" hint="kept on the reward, shown by checkrewardstatus" rows={2} />
			<div class="row">
				<div style="flex:0 0 auto">
					<button type="submit" name="action" value="Approved">
						Approve selected
					</button>
				</div>
				<div style="flex:0 0 auto">
					<button type="submit" name="action" value="Rejected" class="danger">
						Reject selected
					</button>
				</div>
			</div>
		</>
	);
}

export function registerReview(dash: Dash) {
	dash.get("/apps/:appid/review", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const filters = { campaignid: c.req.query("campaignid") ?? "", from: c.req.query("from") ?? "", to: c.req.query("to") ?? "" };
		const status = STATUS_FILTERS.find(([key]) => key === c.req.query("status")) ?? STATUS_FILTERS[0];
		const [statusKey, , statuses] = status ?? ["Suspicious", "", "Suspicious"];
		const qs = new URLSearchParams({ limit: "50" });
		if (statuses) qs.set("status", statuses);
		for (const [k, v] of Object.entries(filters)) if (v) qs.set(k, v);
		if (c.req.query("cursor")) qs.set("cursor", c.req.query("cursor") ?? "");
		const [list, campaigns] = await Promise.all([
			c.var.api("GET", `/apps/${appid}/rewards?${qs}`),
			c.var.api<{ campaigns: { campaignid: number; campaignname: string; archived?: boolean }[] }>("GET", `/apps/${appid}/campaigns`),
		]);
		const rewards = list.ok ? list.body.rewards : [];
		const reviewer = mayAct(await roleIn(c, appid), "reviewer");
		const names = new Map(must(campaigns).campaigns.map((k): [number, string] => [k.campaignid, k.campaignname]));
		const here = `/dashboard/apps/${appid}/review${new URL(c.req.url).search}`;
		const messages = flash(c);
		return c.html(
			<Page
				title="Review queue"
				appid={appid}
				appname={app.name}
				tab="review"
				csrf={c.var.session.csrf}
				ok={messages.ok}
				error={messages.error ?? (list.ok ? null : list.error)}
			>
				<form method="get" class="row" aria-label="Filter the queue">
					<Select
						label="Status"
						name="status"
						value={statusKey}
						options={STATUS_FILTERS.map(([key, label]): [string, string] => [key, label])}
					/>
					<Select
						label="Campaign"
						name="campaignid"
						value={filters.campaignid}
						options={[
							["", "All campaigns"],
							// Archived campaigns leave the picker (issue 48); their rewards still show their names.
							...must(campaigns)
								.campaigns.filter((k) => !k.archived || String(k.campaignid) === filters.campaignid)
								.map((k): [string, string] => [String(k.campaignid), k.campaignname]),
						]}
					/>
					<Field label="From" name="from" type="date" value={filters.from} />
					<Field label="To" name="to" type="date" value={filters.to} />
					<div style="flex:0 0 auto">
						<button type="submit" class="secondary">
							Filter
						</button>
					</div>
				</form>
				<form method="post" action={`/dashboard/apps/${appid}/review`}>
					<Csrf token={c.var.session.csrf} />
					<input type="hidden" name="return" value={here} />
					<p>
						<label>
							<input type="checkbox" data-select-all="ids" /> Select all on this page
						</label>
					</p>
					<p class="muted" data-testid="queue-caption">
						{CAPTIONS[statusKey]}
					</p>
					<Table caption={CAPTIONS[statusKey] ?? "Rewards"} head={REVIEW_HEAD} numeric={[5]} empty={rewards.length === 0}>
						<ReviewRows appid={appid} rewards={rewards} names={names} />
					</Table>
					{reviewer ? <ReviewActions /> : <p class="muted">{READ_ONLY_NOTE}</p>}
				</form>
				<Pager url={c.req.url} next={list.ok ? list.body.nextcursor : null} />
			</Page>,
		);
	});

	dash.post("/apps/:appid/review", async (c) => {
		const appid = c.req.param("appid");
		const form = await c.req.parseBody({ all: true });
		const ids = ([] as unknown[]).concat(form.ids ?? []).filter((v): v is string => typeof v === "string");
		const action = form.action === "Rejected" ? "Rejected" : "Approved";
		// Browsers send a textarea's line breaks as CR LF (HTML's form encoding): kept as the LF the API's own callers send.
		const message = typeof form.message === "string" ? normalizeNewlines(form.message).trim() : "";
		// Checked once normalized: `.../review/../../../..//evil.example/x` starts like the queue but resolves off the site.
		const asked = dashboardPathOr(form.return, "");
		const ret = asked.startsWith(`/dashboard/apps/${appid}/review`) ? asked : `/dashboard/apps/${appid}/review`;
		if (ids.length === 0) return back(c, ret, { error: "Select at least one reward." });
		const res = await c.var.api("POST", `/apps/${appid}/rewards/status`, {
			changes: ids.map((rewarddtlid) => ({ rewarddtlid, rewardstatus: action, ...(message ? { message } : {}) })),
		});
		const verb = action === "Approved" ? "Approved" : "Rejected";
		return back(c, ret, res.ok ? { ok: `${verb} ${res.body.updated} reward(s).` } : { error: `Nothing was changed: ${res.error}` });
	});
}
