/** @jsxImportSource hono/jsx */
import { must } from "../api";
import { type Dash, flash } from "../context";
import { Field, Page, Select, Table } from "../layout";
import { loadApp } from "./apps";

/**
 * The leaderboard (docs/rewards.md, "Leaderboards"): the operator's board of
 * GET /admin/v1/apps/{appid}/leaderboard, with emails, filtered by a plain GET
 * form (campaign, period, size), so it works without JavaScript.
 */

interface OperatorBoard {
	campaignid: number;
	period: string;
	bucket: string;
	timezone: string;
	leaderboard: { rank: number; userkey: string; displayname: string; friendsconverted: number; earned: number; email: string | null }[];
}

const PERIODS: [string, string][] = [
	["all", "All time"],
	["month", "This month"],
	["week", "This week (Monday first)"],
];

export function registerLeaderboard(dash: Dash) {
	dash.get("/apps/:appid/leaderboard", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const query = new URLSearchParams();
		for (const name of ["campaignid", "period", "limit"]) {
			const value = c.req.query(name)?.trim();
			if (value) query.set(name, value);
		}
		const res = await c.var.api<OperatorBoard>("GET", `/apps/${appid}/leaderboard?${query}`);
		// A bad filter is shown on the page, beside the form that fixes it; anything else is the page's error.
		const refused = !res.ok && res.status === 400;
		const board: OperatorBoard = refused
			? { campaignid: app.defaultcampaignid ?? 0, period: "all", bucket: "", timezone: app.timezone, leaderboard: [] }
			: must(res);
		const messages = refused ? { ok: null, error: res.error } : flash(c);
		return c.html(
			<Page title="Leaderboard" appid={appid} appname={app.name} tab="leaderboard" csrf={c.var.session.csrf} {...messages}>
				<form class="grid" method="get" aria-label="Choose the board">
					<Field label="Campaign id" name="campaignid" value={board.campaignid} hint="default: the app's default campaign" />
					<Select label="Period" name="period" value={board.period} options={PERIODS} />
					<Field label="Referrers shown" name="limit" type="number" value={c.req.query("limit") ?? "10"} attrs={{ min: 1, max: 100 }} />
					<div>
						<button type="submit">Show</button>
					</div>
				</form>
				<p class="hint">
					Referrers ranked by distinct friends with a rewarded event in the period ({board.bucket}, time zone {board.timezone}); ties go to
					who reached the count first. Suspicious, rejected and fully refunded rewards do not count; erased users never appear. Names are
					shown as the campaign's "Names on the leaderboard" setting makes them, never an email.
				</p>
				<Table
					caption="Leaderboard"
					head={["Rank", "Referrer", "Email", "Friends converted", "Earned"]}
					numeric={[0, 3, 4]}
					empty={board.leaderboard.length === 0}
				>
					{board.leaderboard.map((e) => (
						<tr>
							<td class="num">{e.rank}</td>
							<td>
								<a href={`/dashboard/apps/${appid}/users/${e.userkey}`}>{e.displayname}</a>
							</td>
							<td>{e.email ?? "—"}</td>
							<td class="num">{e.friendsconverted}</td>
							<td class="num">{e.earned}</td>
						</tr>
					))}
				</Table>
			</Page>,
			refused ? 400 : 200,
		);
	});
}
