/** @jsxImportSource hono/jsx */
import type { AuditRecord } from "../../db/audit";
import { must } from "../api";
import { type Dash, type DashContext, flash } from "../context";
import { csvCell } from "../forms";
import { dateTime, Field, money, Page, Table } from "../layout";
import { loadApp } from "./apps";

/** The audit log (docs/operators.md): filters by action and actor, a CSV export, and one reward's history. */

const show = (value: unknown) => (value === null || value === undefined ? "—" : typeof value === "string" ? value : JSON.stringify(value));

/** "field: before → after" per changed field. */
export const changeLines = (entry: AuditRecord) =>
	Object.entries(entry.changes).map(([field, change]) => `${field}: ${show(change.before)} → ${show(change.after)}`);

function auditQuery(c: DashContext, limit: number): string {
	const q = new URLSearchParams({ limit: String(limit) });
	for (const name of ["action", "actor", "targettype", "targetid", "cursor"]) {
		const value = c.req.query(name)?.trim();
		if (value) q.set(name, value);
	}
	return q.toString();
}

function Entries({ entries }: { entries: AuditRecord[] }) {
	return (
		<Table caption="Audit log" head={["When", "Who", "Action", "Target", "Changes"]} empty={entries.length === 0}>
			{entries.map((e) => (
				<tr>
					<td>{dateTime(e.at)}</td>
					<td>
						{e.actor} <span class="hint">({e.actortype})</span>
					</td>
					<td class="mono">{e.action}</td>
					<td class="mono">{e.targetid ? `${e.targettype} ${e.targetid}` : e.targettype}</td>
					<td>
						{changeLines(e).map((line) => (
							<div>{line}</div>
						))}
					</td>
				</tr>
			))}
		</Table>
	);
}

export function auditCsv(entries: AuditRecord[]): string {
	const head = ["at", "actortype", "actor", "action", "targettype", "targetid", "changes"];
	const rows = entries.map((e) => [e.at, e.actortype, e.actor, e.action, e.targettype, e.targetid ?? "", JSON.stringify(e.changes)]);
	return `${[head, ...rows].map((row) => row.map(csvCell).join(",")).join("\r\n")}\r\n`;
}

export function registerAudit(dash: Dash) {
	dash.get("/apps/:appid/audit", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const { entries, nextcursor } = must(
			await c.var.api<{ entries: AuditRecord[]; nextcursor: string | null }>("GET", `/apps/${appid}/audit?${auditQuery(c, 100)}`),
		);
		const next = new URLSearchParams(auditQuery(c, 100));
		if (nextcursor) next.set("cursor", nextcursor);
		const exportQuery = new URLSearchParams(auditQuery(c, 200));
		exportQuery.delete("cursor");
		return c.html(
			<Page title="Audit log" appid={appid} appname={app.name} tab="audit" csrf={c.var.session.csrf} {...flash(c)}>
				<form class="grid" method="get" aria-label="Filter the audit log">
					<Field label="Action" name="action" value={c.req.query("action") ?? ""} hint="e.g. reward.status, campaign.update" />
					<Field label="Who" name="actor" value={c.req.query("actor") ?? ""} hint="an email, a token's name, an apikey or superuser" />
					<div>
						<button type="submit">Filter</button>
					</div>
				</form>
				<p>
					<a href={`/dashboard/apps/${appid}/audit.csv?${exportQuery}`} download>
						Export as CSV
					</a>
				</p>
				<Entries entries={entries} />
				{nextcursor && (
					<p>
						<a href={`/dashboard/apps/${appid}/audit?${next}`}>Older entries</a>
					</p>
				)}
			</Page>,
		);
	});

	/** The newest 1,000 entries under the filters, as CSV (five pages of the API). */
	dash.get("/apps/:appid/audit.csv", async (c) => {
		const appid = c.req.param("appid");
		const all: AuditRecord[] = [];
		let cursor: string | null = null;
		for (let page = 0; page < 5; page++) {
			const query = new URLSearchParams(auditQuery(c, 200));
			if (cursor) query.set("cursor", cursor);
			const res = await c.var.api<{ entries: AuditRecord[]; nextcursor: string | null }>("GET", `/apps/${appid}/audit?${query}`);
			if (!res.ok) return c.text(res.error, res.status as 400);
			all.push(...res.body.entries);
			cursor = res.body.nextcursor;
			if (!cursor) break;
		}
		return c.body(auditCsv(all), 200, {
			"content-type": "text/csv; charset=utf-8",
			"content-disposition": `attachment; filename="audit-${appid}.csv"`,
		});
	});

	/** One reward: what it is (amounts, status, owner, event, payout) and who changed its status, and when. */
	dash.get("/apps/:appid/rewards/:rewarddtlid", async (c) => {
		const appid = c.req.param("appid");
		const rewarddtlid = c.req.param("rewarddtlid");
		const app = await loadApp(c, appid);
		const query = new URLSearchParams({ targettype: "reward", targetid: rewarddtlid, limit: "200" });
		const [{ entries }, detail] = await Promise.all([
			c.var.api<{ entries: AuditRecord[] }>("GET", `/apps/${appid}/audit?${query}`).then(must),
			c.var.api<RewardDetail>("GET", `/apps/${appid}/rewards/${encodeURIComponent(rewarddtlid)}`),
		]);
		// A reward its ledger has not written to the projection yet answers 404: the page says so.
		if (!detail.ok && detail.status !== 404) must(detail);
		const reward = detail.ok ? detail.body.reward : null;
		return c.html(
			<Page title={`Reward ${rewarddtlid}`} appid={appid} appname={app.name} tab="review" csrf={c.var.session.csrf} {...flash(c)}>
				{reward ? (
					<>
						<RewardFacts appid={appid} reward={reward} />
						{detail.ok && <RewardOrigin event={detail.body.event} payment={detail.body.payment} />}
					</>
				) : (
					<p>No reward with this id in the app (yet: a new reward shows once its ledger wrote it).</p>
				)}
				<h2>Who changed it</h2>
				<Entries entries={entries} />
			</Page>,
		);
	});
}

interface RewardDetail {
	reward: RewardView & { customid: string | null };
	event: { customid: string; userkey: string; eventname: string; transactionvalue: number | null; createdat: string } | null;
	payment: {
		invoice: string | null;
		paymentintent: string | null;
		charge: string | null;
		checkoutsession: string | null;
		currency: string;
		amount: number;
		refunded: number;
	} | null;
}

/** The event the reward was granted for and, for a Stripe conversion, its payment: what someone checking billing needs. */
function RewardOrigin({ event, payment }: Pick<RewardDetail, "event" | "payment">) {
	return (
		<>
			<h2>The event</h2>
			{event ? (
				<dl class="props" data-testid="reward-event">
					<dt>Order id</dt>
					<dd class="mono">{event.customid}</dd>
					<dt>Event</dt>
					<dd>{event.eventname}</dd>
					<dt>Value</dt>
					<dd>{event.transactionvalue === null ? "—" : String(event.transactionvalue)}</dd>
					<dt>Recorded</dt>
					<dd>{dateTime(event.createdat)}</dd>
				</dl>
			) : (
				<p class="muted">No event is stored for this reward (a milestone's reward, or its event was erased with its person).</p>
			)}
			<h2>Payment</h2>
			{payment ? (
				<dl class="props" data-testid="reward-payment">
					<dt>Paid</dt>
					<dd>{money(payment.amount, payment.currency.toUpperCase())}</dd>
					<dt>Refunded</dt>
					<dd>{money(payment.refunded, payment.currency.toUpperCase())}</dd>
					<dt>Stripe invoice</dt>
					<dd class="mono">{payment.invoice ?? "—"}</dd>
					<dt>Stripe payment</dt>
					<dd class="mono">{payment.paymentintent ?? payment.charge ?? payment.checkoutsession ?? "—"}</dd>
				</dl>
			) : (
				<p class="muted">Not a Stripe payment: the conversion came from the app's own call.</p>
			)}
		</>
	);
}

interface PersonView {
	userkey: string;
	email: string | null;
	name: string | null;
}

interface RewardView {
	rewarddtlid: string;
	userkey: string;
	campaignid: number;
	eventname: string;
	usertype: string;
	reward: number;
	rewardunit: string;
	rewardtype: string;
	rewardstatus: string;
	redeemed: number;
	comment: string | null;
	payoutid: string | null;
	payoutstate: string | null;
	createdat: string;
	updatedat: string;
	friend: PersonView | null;
	referrer: PersonView | null;
	fraudsignals: string[];
}

const who = (appid: string, p: PersonView | null) =>
	p ? <a href={`/dashboard/apps/${appid}/users/${encodeURIComponent(p.userkey)}`}>{p.email ?? p.name ?? p.userkey}</a> : "—";

function RewardFacts({ appid, reward: r }: { appid: string; reward: RewardView & { customid: string | null } }) {
	return (
		<dl class="props" data-testid="reward">
			<dt>Amount</dt>
			<dd>
				{money(r.reward, r.rewardunit)} ({r.rewardtype}){r.redeemed > 0 ? `, ${money(r.redeemed, r.rewardunit)} redeemed` : ""}
			</dd>
			<dt>Order id</dt>
			<dd class="mono">{r.customid ?? "—"}</dd>
			<dt>Status</dt>
			<dd>{r.rewardstatus}</dd>
			<dt>Owner</dt>
			<dd>
				{who(appid, r.usertype === "Friend" ? r.friend : r.referrer)} ({r.usertype.toLowerCase()})
			</dd>
			<dt>Event</dt>
			<dd>
				{r.eventname}, campaign {r.campaignid}
			</dd>
			<dt>Friend</dt>
			<dd>{who(appid, r.friend)}</dd>
			<dt>Referrer</dt>
			<dd>{who(appid, r.referrer)}</dd>
			<dt>Payout</dt>
			<dd>{r.payoutstate ? `${r.payoutstate}${r.payoutid ? ` (${r.payoutid})` : ""}` : "none (not a Stripe reward)"}</dd>
			<dt>Fraud signals</dt>
			<dd>{r.fraudsignals.length ? r.fraudsignals.join(", ") : "none"}</dd>
			<dt>Comment</dt>
			<dd>{r.comment || "—"}</dd>
			<dt>Created</dt>
			<dd>{dateTime(r.createdat)}</dd>
			<dt>Last changed</dt>
			<dd>{dateTime(r.updatedat)}</dd>
		</dl>
	);
}
