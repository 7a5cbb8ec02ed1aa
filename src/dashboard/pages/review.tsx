/** @jsxImportSource hono/jsx */
import { dashboardPathOr } from "../../domain/redirect";
import { must } from "../api";
import { back, type Dash, flash } from "../context";
import { Csrf, Field, Page, Pager, Select, Table, TextArea } from "../layout";
import { loadApp } from "./apps";
import { REWARD_HEAD, RewardRows } from "./users";

/** Review queue: rewards UnderReview and Suspicious across the app; approve or reject one or many with a comment. */

export function registerReview(dash: Dash) {
	dash.get("/apps/:appid/review", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const filters = { campaignid: c.req.query("campaignid") ?? "", from: c.req.query("from") ?? "", to: c.req.query("to") ?? "" };
		const qs = new URLSearchParams({ status: "UnderReview,Suspicious", limit: "50" });
		for (const [k, v] of Object.entries(filters)) if (v) qs.set(k, v);
		if (c.req.query("cursor")) qs.set("cursor", c.req.query("cursor") ?? "");
		const [list, campaigns] = await Promise.all([
			c.var.api("GET", `/apps/${appid}/rewards?${qs}`),
			c.var.api<{ campaigns: { campaignid: number; campaignname: string }[] }>("GET", `/apps/${appid}/campaigns`),
		]);
		const rewards = list.ok ? list.body.rewards : [];
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
						label="Campaign"
						name="campaignid"
						value={filters.campaignid}
						options={[
							["", "All campaigns"],
							...must(campaigns).campaigns.map((k): [string, string] => [String(k.campaignid), k.campaignname]),
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
					<Table caption="Rewards waiting for review" head={["Pick", ...REWARD_HEAD]} numeric={[3, 6]} empty={rewards.length === 0}>
						<RewardRows appid={appid} rewards={rewards} select />
					</Table>
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
		const message = typeof form.message === "string" ? form.message.trim() : "";
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
