/** @jsxImportSource hono/jsx */
import { must } from "../api";
import { back, type Dash, flash } from "../context";
import { Csrf, dateTime, money, Page, Pager, Status, Table } from "../layout";
import { mayAct, roleIn } from "../role";
import { loadApp } from "./apps";

/** Users: search, and a user page (profile, referrer, balance, clicks, friends and rewards, both paged). */

type Values = Record<string, any>;

function UserRows({ appid, users }: { appid: string; users: Values[] }) {
	return (
		<>
			{users.map((u) => (
				<tr>
					<td>
						<a href={`/dashboard/apps/${appid}/users/${u.userkey}`}>{u.email ?? u.useraccountid ?? u.userkey}</a>
					</td>
					<td>{u.name ?? ""}</td>
					<td class="mono">{u.referralcode}</td>
					<td class="num">{u.friends}</td>
					<td class="num">{u.converted}</td>
					<td>
						{u.referreruserkey ? (
							<a href={`/dashboard/apps/${appid}/users/${encodeURIComponent(u.referreruserkey)}`}>
								{u.referrername || u.referreremail || u.referreruserkey}
							</a>
						) : (
							<span class="muted">nobody</span>
						)}
					</td>
					<td>{dateTime(u.createdat)}</td>
				</tr>
			))}
		</>
	);
}

const USER_HEAD = ["User", "Name", "Code", "Friends", "Converted", "Referred by", "Created"];

export function RewardRows({ appid, rewards, select }: { appid: string; rewards: Values[]; select?: boolean }) {
	return (
		<>
			{rewards.map((r) => (
				<tr>
					{select && (
						<td>
							<input type="checkbox" name="ids" value={r.rewarddtlid} id={`pick-${r.rewarddtlid}`} aria-label={`Select ${r.rewarddtlid}`} />
						</td>
					)}
					<td class="mono">
						<a href={`/dashboard/apps/${appid}/rewards/${encodeURIComponent(r.rewarddtlid)}`} title="Who changed this reward">
							{r.rewarddtlid}
						</a>
					</td>
					<td>
						<Status value={r.rewardstatus} />
						{r.rewardtype === "Stripe" && (
							<div class="hint" data-testid="payout">
								{payoutWords(r)}
							</div>
						)}
					</td>
					<td class="num">{money(r.reward, r.rewardunit)}</td>
					<td>
						{r.usertype} · {r.eventname}
					</td>
					<td>
						<a href={`/dashboard/apps/${appid}/users/${r.userkey}`}>{r.userkey}</a>
					</td>
					<td class="num">{r.campaignid}</td>
					<td>{r.comment ?? ""}</td>
					<td>{dateTime(r.createdat)}</td>
				</tr>
			))}
		</>
	);
}

/** Where a Stripe reward's payout stands (docs/stripe.md), in words. */
export function payoutWords(r: Values): string {
	if (r.payoutid) return `paid into Stripe: ${r.payoutid}`;
	if (r.payoutstate === "waiting_customer") return "waiting for a paymentcustomerid";
	if (r.payoutstate === "failed") return "payout failed (the comment says why)";
	if (r.payoutstate === "pending") return "payout under way";
	return "paid into Stripe once approved";
}

export const REWARD_HEAD = ["Reward", "Status", "Amount", "For", "User", "Campaign", "Comment", "Created"];

/** A Stripe reward the retry would pay: approved, not paid, its payout refused or waiting. */
const unpaid = (r: Values) => r.rewardtype === "Stripe" && r.rewardstatus === "Approved" && !r.payoutid && r.payoutstate !== "pending";

export function registerUsers(dash: Dash) {
	dash.post("/apps/:appid/users/:userkey/payouts/retry", async (c) => {
		const appid = c.req.param("appid");
		const userkey = encodeURIComponent(c.req.param("userkey"));
		const res = await c.var.api("POST", `/apps/${appid}/users/${userkey}/payouts/retry`);
		const message = res.ok ? { ok: `Payout of ${res.body.queued} reward(s) queued.` } : { error: res.error };
		return back(c, `/dashboard/apps/${appid}/users/${userkey}`, message);
	});

	dash.get("/apps/:appid/users", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const q = c.req.query("q") ?? "";
		const qs = new URLSearchParams({ limit: "50" });
		if (q) qs.set("q", q);
		if (c.req.query("cursor")) qs.set("cursor", c.req.query("cursor") ?? "");
		const res = await c.var.api("GET", `/apps/${appid}/users?${qs}`);
		const users: Values[] = res.ok ? res.body.users : [];
		return c.html(
			<Page
				title="Users"
				appid={appid}
				appname={app.name}
				tab="users"
				csrf={c.var.session.csrf}
				{...flash(c)}
				error={res.ok ? null : res.error}
			>
				<form method="get" class="row" aria-label="Search users">
					<div>
						<label for="q">Search</label>
						<input id="q" name="q" type="search" value={q} placeholder="email, account id, referral code or userkey" />
					</div>
					<div style="flex:0 0 auto">
						<button type="submit">Search</button>
					</div>
				</form>
				<Table caption="Users" head={USER_HEAD} numeric={[3, 4]} empty={users.length === 0}>
					<UserRows appid={appid} users={users} />
				</Table>
				<Pager url={c.req.url} next={res.ok ? res.body.nextcursor : null} />
			</Page>,
		);
	});

	dash.get("/apps/:appid/users/:userkey", async (c) => {
		const appid = c.req.param("appid");
		const userkey = encodeURIComponent(c.req.param("userkey"));
		const app = await loadApp(c, appid);
		const detail = must(await c.var.api("GET", `/apps/${appid}/users/${userkey}`));
		const fcursor = c.req.query("fcursor");
		const rcursor = c.req.query("rcursor");
		const [friends, rewards] = await Promise.all([
			c.var.api("GET", `/apps/${appid}/users/${userkey}/friends?limit=20${fcursor ? `&cursor=${encodeURIComponent(fcursor)}` : ""}`),
			c.var.api("GET", `/apps/${appid}/rewards?limit=20&userkey=${userkey}${rcursor ? `&cursor=${encodeURIComponent(rcursor)}` : ""}`),
		]);
		const u = detail.user;
		const balances: Values[] = detail.userbalance.flatMap((unit: Values) =>
			unit.growthhacks.flatMap((g: Values) => g.campaigns.map((k: Values) => ({ ...k, rewardunit: unit.rewardunit }))),
		);
		return c.html(
			<Page
				title={u.email ?? u.useraccountid ?? u.userkey}
				appid={appid}
				appname={app.name}
				tab="users"
				csrf={c.var.session.csrf}
				{...flash(c)}
			>
				{detail.sharepageurl && (
					<p>
						<a href={detail.sharepageurl} target="_blank" rel="noopener noreferrer" data-testid="share-page-link">
							Open their share page
						</a>{" "}
						<span class="hint">(the page they see: a signed link, valid for an hour)</span>
					</p>
				)}
				<h2>Profile</h2>
				<dl class="props">
					<dt>userkey</dt>
					<dd class="mono">{u.userkey}</dd>
					<dt>Email</dt>
					<dd>{u.email ?? "—"}</dd>
					<dt>Account id</dt>
					<dd>{u.useraccountid ?? "—"}</dd>
					<dt>Name</dt>
					<dd>{u.name ?? "—"}</dd>
					<dt>Phone</dt>
					<dd>{u.phone ?? "—"}</dd>
					<dt>Referral code</dt>
					<dd class="mono">{u.referralcode}</dd>
					<dt>Campaign</dt>
					<dd>{u.campaignid}</dd>
					<dt>Status</dt>
					<dd>{u.status}</dd>
					<dt>Referrer</dt>
					<dd>
						{detail.referrer ? (
							<a href={`/dashboard/apps/${appid}/users/${detail.referrer.userkey}`}>
								{detail.referrer.name || detail.referrer.email || detail.referrer.userkey} ({detail.referrer.referralcode})
							</a>
						) : (
							"none"
						)}
					</dd>
					<dt>Registered</dt>
					<dd>{dateTime(u.createdat)}</dd>
					<dt>Share-link clicks</dt>
					<dd>
						{detail.clicks.total} in the last 90 days
						{detail.clicks.days.length > 0 && ` (latest: ${detail.clicks.days[0].day}, ${detail.clicks.days[0].clicks})`}
					</dd>
				</dl>
				<h2>Balance</h2>
				<Table
					caption="Balance"
					head={["Unit", "Campaign", "Pending", "Approved", "Claimed", "Total", "Owed (clawbacks)"]}
					numeric={[2, 3, 4, 5, 6]}
					empty={balances.length === 0}
				>
					{balances.map((b) => (
						<tr>
							<td>{b.rewardunit}</td>
							<td>{b.campaignname}</td>
							<td class="num">{money(b.pending, b.rewardunit)}</td>
							<td class="num">{money(b.approved, b.rewardunit)}</td>
							<td class="num">{money(b.claimed, b.rewardunit)}</td>
							<td class="num">{money(b.total, b.rewardunit)}</td>
							{/* Refunded rewards already spent: owed back, outside the total (ledger/clawbacks.ts). */}
							<td class="num" data-testid="owed">
								{money(b.owed ?? 0, b.rewardunit)}
							</td>
						</tr>
					))}
				</Table>
				<h2>Rewards</h2>
				<Table caption="Rewards" head={REWARD_HEAD} numeric={[2, 5]} empty={!rewards.ok || rewards.body.rewards.length === 0}>
					<RewardRows appid={appid} rewards={rewards.ok ? rewards.body.rewards : []} />
				</Table>
				{rewards.ok && rewards.body.rewards.some(unpaid) && mayAct(await roleIn(c, appid), "reviewer") && (
					<form method="post" action={`/dashboard/apps/${appid}/users/${userkey}/payouts/retry`}>
						<Csrf token={c.var.session.csrf} />
						<button type="submit">Retry the Stripe payouts</button>{" "}
						<span class="hint">after fixing the customer in Stripe or setting a paymentcustomerid</span>
					</form>
				)}
				<Pager url={c.req.url} param="rcursor" next={rewards.ok ? rewards.body.nextcursor : null} label="More rewards →" />
				<h2>
					Friends ({u.friends}, {u.converted} converted)
				</h2>
				<Table caption="Friends" head={USER_HEAD} numeric={[3, 4]} empty={!friends.ok || friends.body.friends.length === 0}>
					<UserRows appid={appid} users={friends.ok ? friends.body.friends : []} />
				</Table>
				<Pager url={c.req.url} param="fcursor" next={friends.ok ? friends.body.nextcursor : null} label="More friends →" />
			</Page>,
		);
	});
}
