/** @jsxImportSource hono/jsx */
import { activityOf, type StatsDay } from "../activity";
import { LineChart } from "../chart";
import { type Dash, type DashContext, flash } from "../context";
import { csvCell } from "../forms";
import { Field, money, Page, Select, Table } from "../layout";
import { loadApp } from "./apps";

/**
 * Analytics: clicks → signups → conversions → rewards per local day of the
 * app's time zone: the totals first, a chart over the whole range, the funnel per campaign, top referrers, the days with activity
 * (quiet days folded), CSV export of every day. Amounts are per currency,
 * one column each.
 */

type Values = Record<string, any>;

/** An amount in a column already headed by its unit ("Earned USD"): the number with the unit's decimals. */
const amountIn = (value: number, unit: string) => money(value, unit).split(" ")[0];

const units = (m: Record<string, number>) =>
	Object.entries(m)
		.map(([unit, v]) => money(v, unit))
		.join(", ");

function statsQuery(c: DashContext): URLSearchParams {
	const qs = new URLSearchParams();
	for (const k of ["campaignid", "from", "to"]) {
		const v = c.req.query(k);
		if (v) qs.set(k, v);
	}
	return qs;
}

/**
 * A step's rate as the page shows it (issue 48): "—" when there is nothing to divide by, or when the step's base
 * is smaller than what came out of it (friends who typed a code without clicking a link: 2 sign-ups from 1 click
 * is not "100%"), so no rate on the page claims more than the counts beside it show.
 */
export function shownRate(part: number, whole: number): string {
	if (!(whole > 0) || whole < part) return "—";
	return `${Math.round((part / whole) * 1000) / 10}%`;
}

/** The stats as CSV, one row per local day; amounts one column per currency (`reward_amount_USD`, `redeemed_EUR`). */
export function statsCsv(stats: Values): string {
	const unitList: string[] = stats.units ?? [];
	const head = [
		"day",
		"clicks",
		"signups",
		"referred_signups",
		"conversions",
		"rewards_created",
		...unitList.map((u) => `reward_amount_${u}`),
		...unitList.map((u) => `redeemed_${u}`),
	];
	const rows = stats.days.map((d: Values) =>
		[
			d.day,
			d.clicks,
			d.signups,
			d.referredsignups,
			d.conversions,
			d.rewardscreated,
			...unitList.map((u) => d.rewardamount[u] ?? 0),
			...unitList.map((u) => d.redeemed[u] ?? 0),
		]
			.map(csvCell)
			.join(","),
	);
	return `${[head.join(","), ...rows].join("\r\n")}\r\n`;
}

/** Clicks → referred sign-ups → conversions with their rates, per campaign and for the whole range. */
function Funnel({ stats, names }: { stats: Values; names: Map<number, string> }) {
	const rows: Values[] = [...stats.campaigns, { ...stats.funnel, campaignid: null }];
	return (
		<>
			<h2 id="funnel-table">
				Funnel, {stats.from} to {stats.to}
			</h2>
			<Table
				caption="Funnel per campaign: clicks, referred sign-ups, conversions and rates"
				head={["Campaign", "Unique clicks", "Referred sign-ups", "Sign-up rate", "Conversions", "Conversion rate", "Clicks to conversions"]}
				numeric={[1, 2, 3, 4, 5, 6]}
			>
				{rows.map((r) => (
					<tr data-funnel={r.campaignid ?? "all"}>
						<td>{r.campaignid === null ? <strong>All campaigns</strong> : (names.get(r.campaignid) ?? `Campaign ${r.campaignid}`)}</td>
						<td class="num">{r.clicks}</td>
						<td class="num">{r.signups}</td>
						<td class="num">{shownRate(r.signups, r.clicks)}</td>
						<td class="num">{r.conversions}</td>
						<td class="num">{shownRate(r.conversions, r.signups)}</td>
						<td class="num">{shownRate(r.conversions, r.clicks)}</td>
					</tr>
				))}
			</Table>
		</>
	);
}

export function registerAnalytics(dash: Dash) {
	dash.get("/apps/:appid/analytics", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const qs = statsQuery(c);
		const [res, campaigns] = await Promise.all([
			c.var.api("GET", `/apps/${appid}/stats?${qs}`),
			c.var.api<{ campaigns: { campaignid: number; campaignname: string; archived?: boolean }[] }>("GET", `/apps/${appid}/campaigns`),
		]);
		const stats: Values | null = res.ok ? res.body : null;
		const days: Values[] = stats?.days ?? [];
		const unitList: string[] = stats?.units ?? [];
		const names = new Map<number, string>(
			(campaigns.ok ? campaigns.body.campaigns : []).map((k): [number, string] => [k.campaignid, k.campaignname]),
		);
		const requestsOn = new Map<string, number>((stats?.requests.days ?? []).map((d: Values) => [d.day, d.requests]));
		const activity = activityOf(days as (StatsDay & Values)[], requestsOn);
		// The chart covers the chosen range, quiet days drawn flat at zero (issue 48): cut to the active days, a busy
		// last day read as a steep line up from the day before.
		const shown = activity.active.length > 0 ? days : [];
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
				<p data-testid="timezone">
					Days are counted in <strong>{app.timezone}</strong> (<a href={`/dashboard/apps/${appid}#settings`}>change the app's time zone</a>
					). Earned amounts leave out rejected rewards and refunded amounts.
				</p>
				<form method="get" class="row" aria-label="Range and campaign">
					<Select
						label="Campaign"
						name="campaignid"
						value={c.req.query("campaignid") ?? ""}
						options={[
							["", "All campaigns"],
							// Archived campaigns leave the picker (issue 48); their rows still name them.
							...(campaigns.ok ? campaigns.body.campaigns : [])
								.filter((k) => !k.archived || String(k.campaignid) === c.req.query("campaignid"))
								.map((k): [string, string] => [String(k.campaignid), k.campaignname]),
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
						<h2 id="totals">
							Totals, {stats.from} to {stats.to}
						</h2>
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
								{units(stats.totals.rewardamount) && `earned ${units(stats.totals.rewardamount)}`}
							</div>
							<div class="card">
								Redeemed<b>{units(stats.totals.redeemed) || "0"}</b>
							</div>
						</div>
						{shown.length > 0 ? (
							<LineChart
								id="funnel"
								title={`Clicks, signups, conversions and rewards per day, ${shown[0]?.day} to ${shown.at(-1)?.day}`}
								days={shown.map((d) => d.day)}
								series={[
									{ label: "Unique clicks", color: "#0a58ca", values: shown.map((d) => d.clicks) },
									{ label: "Signups", color: "#1a7f37", values: shown.map((d) => d.signups) },
									{ label: "Conversions", color: "#bf3989", values: shown.map((d) => d.conversions) },
									{ label: "Rewards", color: "#9a6700", values: shown.map((d) => d.rewardscreated) },
								]}
							/>
						) : (
							<p data-testid="no-activity">
								No activity from {stats.from} to {stats.to}.
							</p>
						)}
						<p>
							<a href={`/dashboard/apps/${appid}/analytics.csv?${qs}`} download>
								Export CSV
							</a>
						</p>
						<Funnel stats={stats} names={names} />
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
						<h2>Days with activity ({stats.timezone})</h2>
						<Table
							caption={`Days with activity, ${stats.timezone}`}
							head={[
								"Day",
								"Unique clicks",
								"Signups",
								"Referred",
								"Conversions",
								"Rewards",
								...unitList.map((u) => `Earned ${u}`),
								...unitList.map((u) => `Redeemed ${u}`),
								"Link requests",
							]}
							numeric={Array.from({ length: 6 + unitList.length * 2 }, (_, i) => i + 1)}
							empty={activity.active.length === 0}
						>
							{[...activity.active].reverse().map((d) => (
								<tr data-day={d.day}>
									<td>{d.day}</td>
									<td class="num">{d.clicks}</td>
									<td class="num">{d.signups}</td>
									<td class="num">{d.referredsignups}</td>
									<td class="num" data-testid="conversions">
										{d.conversions}
									</td>
									<td class="num">{d.rewardscreated}</td>
									{unitList.map((u) => (
										<td class="num" data-unit={u}>
											{amountIn(d.rewardamount[u] ?? 0, u)}
										</td>
									))}
									{unitList.map((u) => (
										<td class="num">{amountIn(d.redeemed[u] ?? 0, u)}</td>
									))}
									<td class="num">{requestsOn.get(d.day) ?? 0}</td>
								</tr>
							))}
						</Table>
						{activity.quietDays > 0 && (
							<details data-testid="quiet-days">
								<summary>
									{activity.quietDays} {activity.quietDays === 1 ? "day" : "days"} without activity
								</summary>
								<ul>
									{[...activity.quiet].reverse().map((run) => (
										<li>{run.days === 1 ? run.from : `${run.from} to ${run.to} (${run.days} days)`}</li>
									))}
								</ul>
							</details>
						)}
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
