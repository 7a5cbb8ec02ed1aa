/** @jsxImportSource hono/jsx */
import { LineChart } from "../chart";
import { type Dash, type DashContext, flash } from "../context";
import { csvCell } from "../forms";
import { Field, Page, Select, Table } from "../layout";
import { loadApp } from "./apps";

/** Analytics: clicks → signups → conversions → rewards per day, as a chart and a table, top referrers, CSV export. */

type Values = Record<string, any>;

const units = (m: Record<string, number>) =>
	Object.entries(m)
		.map(([unit, v]) => `${v} ${unit}`)
		.join(", ");

function statsQuery(c: DashContext): URLSearchParams {
	const qs = new URLSearchParams();
	for (const k of ["campaignid", "from", "to"]) {
		const v = c.req.query(k);
		if (v) qs.set(k, v);
	}
	return qs;
}

/** The stats as CSV, one row per day (amounts as "10 USD; 3 EUR"). */
export function statsCsv(stats: Values): string {
	const head = ["day", "clicks", "signups", "referred_signups", "conversions", "rewards_created", "reward_amount", "redeemed"];
	const rows = stats.days.map((d: Values) =>
		[
			d.day,
			d.clicks,
			d.signups,
			d.referredsignups,
			d.conversions,
			d.rewardscreated,
			units(d.rewardamount).replace(/, /g, "; "),
			units(d.redeemed).replace(/, /g, "; "),
		]
			.map(csvCell)
			.join(","),
	);
	return `${[head.join(","), ...rows].join("\r\n")}\r\n`;
}

export function registerAnalytics(dash: Dash) {
	dash.get("/apps/:appid/analytics", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const qs = statsQuery(c);
		const [res, campaigns] = await Promise.all([
			c.var.api("GET", `/apps/${appid}/stats?${qs}`),
			c.var.api<{ campaigns: { campaignid: number; campaignname: string }[] }>("GET", `/apps/${appid}/campaigns`),
		]);
		const stats: Values | null = res.ok ? res.body : null;
		const days: Values[] = stats?.days ?? [];
		const requestsOn = new Map<string, number>((stats?.requests.days ?? []).map((d: Values) => [d.day, d.requests]));
		return c.html(
			<Page
				title="Analytics"
				appid={appid}
				appname={app.name}
				tab="analytics"
				csrf={c.var.session.csrf}
				{...flash(c)}
				error={res.ok ? null : res.error}
			>
				<form method="get" class="row" aria-label="Range and campaign">
					<Select
						label="Campaign"
						name="campaignid"
						value={c.req.query("campaignid") ?? ""}
						options={[
							["", "All campaigns"],
							...(campaigns.ok ? campaigns.body.campaigns : []).map((k): [string, string] => [String(k.campaignid), k.campaignname]),
						]}
					/>
					<Field label="From" name="from" type="date" value={stats?.from ?? c.req.query("from")} />
					<Field label="To" name="to" type="date" value={stats?.to ?? c.req.query("to")} />
					<div style="flex:0 0 auto">
						<button type="submit" class="secondary">
							Show
						</button>
					</div>
				</form>
				{stats && (
					<>
						<div class="cards" data-testid="totals">
							<div class="card">
								Unique clicks<b data-testid="total-clicks">{stats.totals.clicks}</b>
							</div>
							<div class="card">
								Link requests<b data-testid="total-requests">{stats.requests.total}</b>
								all, bots and repeats included
							</div>
							<div class="card">
								Signups<b data-testid="total-signups">{stats.totals.signups}</b>
							</div>
							<div class="card">
								Referred signups<b>{stats.totals.referredsignups}</b>
								{stats.referredshare === null ? "" : `${Math.round(stats.referredshare * 100)}% of signups`}
							</div>
							<div class="card">
								Conversions<b>{stats.totals.conversions}</b>
							</div>
							<div class="card">
								Rewards<b>{stats.totals.rewardscreated}</b>
								{units(stats.totals.rewardamount)}
							</div>
							<div class="card">
								Redeemed<b>{units(stats.totals.redeemed) || "0"}</b>
							</div>
						</div>
						<LineChart
							id="funnel"
							title={`Clicks, signups, conversions and rewards per day, ${stats.from} to ${stats.to}`}
							days={days.map((d) => d.day)}
							series={[
								{ label: "Unique clicks", color: "#0a58ca", values: days.map((d) => d.clicks) },
								{ label: "Signups", color: "#1a7f37", values: days.map((d) => d.signups) },
								{ label: "Conversions", color: "#bf3989", values: days.map((d) => d.conversions) },
								{ label: "Rewards", color: "#9a6700", values: days.map((d) => d.rewardscreated) },
							]}
						/>
						<p>
							<a href={`/dashboard/apps/${appid}/analytics.csv?${qs}`} download>
								Export CSV
							</a>
						</p>
						<h2>Top referrers</h2>
						<Table
							caption="Top referrers"
							head={["Referrer", "Code", "Converted friends"]}
							numeric={[2]}
							empty={stats.topreferrers.length === 0}
						>
							{stats.topreferrers.map((r: Values) => (
								<tr>
									<td>
										<a href={`/dashboard/apps/${appid}/users/${r.userkey}`}>{r.email ?? r.name ?? r.userkey}</a>
									</td>
									<td class="mono">{r.referralcode}</td>
									<td class="num">{r.conversions}</td>
								</tr>
							))}
						</Table>
						<h2>Per day</h2>
						<Table
							caption="Per day"
							head={["Day", "Unique clicks", "Signups", "Referred", "Conversions", "Rewards", "Amount", "Redeemed", "Link requests"]}
							numeric={[1, 2, 3, 4, 5, 8]}
						>
							{[...days].reverse().map((d) => (
								<tr data-day={d.day}>
									<td>{d.day}</td>
									<td class="num">{d.clicks}</td>
									<td class="num">{d.signups}</td>
									<td class="num">{d.referredsignups}</td>
									<td class="num">{d.conversions}</td>
									<td class="num">{d.rewardscreated}</td>
									<td>{units(d.rewardamount)}</td>
									<td>{units(d.redeemed)}</td>
									<td class="num">{requestsOn.get(d.day) ?? 0}</td>
								</tr>
							))}
						</Table>
					</>
				)}
			</Page>,
		);
	});

	dash.get("/apps/:appid/analytics.csv", async (c) => {
		const appid = c.req.param("appid");
		const res = await c.var.api("GET", `/apps/${appid}/stats?${statsQuery(c)}`);
		if (!res.ok) return c.text(res.error, res.status as 400);
		return c.body(statsCsv(res.body), 200, {
			"content-type": "text/csv; charset=utf-8",
			"content-disposition": `attachment; filename="stats-${appid}-${res.body.from}-${res.body.to}.csv"`,
		});
	});
}
