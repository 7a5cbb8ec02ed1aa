/** @jsxImportSource hono/jsx */
import { must } from "../api";
import { back, type Dash, flash } from "../context";
import { Csrf, dateTime, Page, Status, Table } from "../layout";
import { mayAct, roleIn } from "../role";
import { loadApp } from "./apps";

/** Deliveries: the webhook and email log with attempts, and redeliver. */

type Values = Record<string, any>;

export function registerDeliveries(dash: Dash) {
	dash.get("/apps/:appid/deliveries", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const { deliveries } = must(await c.var.api<{ deliveries: Values[] }>("GET", `/apps/${appid}/deliveries?limit=100`));
		return c.html(
			<Page title="Deliveries" appid={appid} appname={app.name} tab="deliveries" csrf={c.var.session.csrf} {...flash(c)}>
				<p class="muted">The latest 100 webhooks and emails, newest first.</p>
				<Table
					caption="Deliveries"
					head={["Event", "Kind", "Type", "Status", "Attempts", "Last attempt", "Created"]}
					numeric={[4]}
					empty={deliveries.length === 0}
				>
					{deliveries.map((d) => (
						<tr>
							<td class="mono">
								<a href={`/dashboard/apps/${appid}/deliveries/${encodeURIComponent(d.eventid)}`}>{d.eventid}</a>
							</td>
							<td>{d.kind}</td>
							<td>{d.type}</td>
							<td>
								<Status value={d.status} />
							</td>
							<td class="num">{d.attempts}</td>
							<td>
								{d.lastattempt
									? `${d.lastattempt.outcome}${d.lastattempt.responsecode ? ` (HTTP ${d.lastattempt.responsecode})` : ""}${d.lastattempt.error ? `: ${d.lastattempt.error}` : ""}`
									: "—"}
							</td>
							<td>{dateTime(d.createdat)}</td>
						</tr>
					))}
				</Table>
			</Page>,
		);
	});

	dash.get("/apps/:appid/deliveries/:eventid", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const d = must(await c.var.api<Values>("GET", `/apps/${appid}/deliveries/${encodeURIComponent(c.req.param("eventid"))}`));
		return c.html(
			<Page title={`${d.type}`} appid={appid} appname={app.name} tab="deliveries" csrf={c.var.session.csrf} {...flash(c)}>
				<dl class="props">
					<dt>Event id</dt>
					<dd class="mono">{d.eventid}</dd>
					<dt>Kind</dt>
					<dd>{d.kind}</dd>
					<dt>Status</dt>
					<dd>
						<Status value={d.status} />
					</dd>
					<dt>Created</dt>
					<dd>{dateTime(d.createdat)}</dd>
					<dt>Delivered</dt>
					<dd>{dateTime(d.deliveredat) || "—"}</dd>
				</dl>
				{mayAct(await roleIn(c, appid), "reviewer") && (
					<form method="post" action={`/dashboard/apps/${appid}/deliveries/${encodeURIComponent(d.eventid)}/redeliver`}>
						<Csrf token={c.var.session.csrf} />
						<button type="submit">Redeliver</button>
					</form>
				)}
				<h2>Attempts</h2>
				<Table
					caption="Attempts"
					head={["#", "Outcome", "HTTP", "ms", "Error", "At"]}
					numeric={[0, 2, 3]}
					empty={d.attemptlog.length === 0}
				>
					{d.attemptlog.map((a: Values) => (
						<tr>
							<td class="num">{a.attempt}</td>
							<td>{a.outcome}</td>
							<td class="num">{a.responsecode ?? ""}</td>
							<td class="num">{a.durationms}</td>
							<td>{a.error ?? ""}</td>
							<td>{dateTime(a.at)}</td>
						</tr>
					))}
				</Table>
				<h2>Payload</h2>
				<pre class="mono" tabindex={0}>
					{JSON.stringify(d.payload, null, 2)}
				</pre>
			</Page>,
		);
	});

	dash.post("/apps/:appid/deliveries/:eventid/redeliver", async (c) => {
		const appid = c.req.param("appid");
		const eventid = encodeURIComponent(c.req.param("eventid"));
		const res = await c.var.api("POST", `/apps/${appid}/deliveries/${eventid}/redeliver`);
		return back(c, `/dashboard/apps/${appid}/deliveries/${eventid}`, res.ok ? { ok: "Sent again." } : { error: res.error });
	});
}
