/** @jsxImportSource hono/jsx */
import { must } from "../api";
import { back, type Dash, type DashContext, field, flash } from "../context";
import { campaignFromForm, couponsFromText, formErrorText } from "../forms";
import { Csrf, Field, Page, Select, Table, TextArea } from "../layout";
import { mayAct, READ_ONLY_NOTE, roleIn } from "../role";
import { loadApp } from "./apps";
import { ActionFields, asTyped, FraudFields, RuleFields, withBlankActions, withBlankRules } from "./campaign-rows";

/** Campaigns: list, create, edit every field the admin API has, coupon pool upload. */

type Values = Record<string, any>;

/** `rewardtype` as the rules engine reads it (rewards/rules.ts rewardTypeAllows): 1 pays the referrer, 2 the friend. */
const REWARD_TYPES: [string, string][] = [
	["0", "0 – none"],
	["1", "1 – referrer only"],
	["2", "2 – friend only"],
	["3", "3 – both"],
];
/** The campaign's fields; `submit` null (a role below manager) shows them without a way to save. */
/** How the public board names referrers (domain/display-name.ts); emails and hidden characters are never shown in any. */
const NAME_STYLES: [string, string][] = [
	["firstinitial", "First name and initial (Ann L.)"],
	["initials", "Initials (A. L.)"],
	["numbered", "Referrer #n (by rank)"],
];

function CampaignForm({ action, campaign, csrf, submit }: { action: string; campaign: Values; csrf: string; submit: string | null }) {
	const rules = withBlankRules(campaign.rewardrules);
	const actions = withBlankActions(campaign.socialactions);
	const start = typeof campaign.campaignstartdate === "string" ? campaign.campaignstartdate.slice(0, 16) : "";
	const end = typeof campaign.campaignenddate === "string" ? campaign.campaignenddate.slice(0, 16) : "";
	return (
		<form class="grid" method="post" action={action}>
			<Csrf token={csrf} />
			<h2>Offer</h2>
			<Field label="Campaign name" name="campaignname" value={campaign.campaignname} required />
			<Field label="Offer title" name="offertitle" value={campaign.offertitle} />
			<TextArea label="Offer description" name="offerdescription" value={campaign.offerdescription} />
			<TextArea label="Terms" name="terms" value={campaign.terms} rows={5} />
			<div class="two">
				<Field label="Start (UTC)" name="campaignstartdate" type="datetime-local" value={start} />
				<Field
					label="End (UTC)"
					name="campaignenddate"
					type="datetime-local"
					value={end}
					hint="empty: no end; events after it earn nothing"
				/>
			</div>
			<Select label="Reward type" name="rewardtype" value={String(campaign.rewardtype ?? 3)} options={REWARD_TYPES} />
			<h2>Review and payout</h2>
			<div class="two">
				<Field label="Hold days" name="holddays" type="number" value={campaign.holddays ?? 0} attrs={{ min: 0, max: 365 }} />
				<Select
					label="Distribution"
					name="distribution"
					value={campaign.distribution ?? "InstoreCredits"}
					options={[
						["InstoreCredits", "In-store credits"],
						["Coupon", "Coupons from the pool"],
						["Stripe", "Paid into Stripe (customer balance credit)"],
					]}
				/>
			</div>
			<label>
				<input type="checkbox" name="autoapprove" checked={campaign.autoapprove !== false} /> Approve rewards automatically (after the hold)
			</label>
			<FraudFields campaign={campaign} />
			<div class="two">
				<Field label="Growth hack" name="growthhack" value={campaign.growthhack ?? "SaaS_Referrals"} />
				<Field label="Currency of % rewards" name="currency" value={campaign.currency ?? "USD"} />
			</div>
			<h2>Look</h2>
			<div class="two">
				<Field label="Background colour" name="campaignbgcolor" type="color" value={campaign.campaignbgcolor ?? "#ffffff"} />
				<Field label="Widget font" name="widgetfont" value={campaign.widgetfont} />
			</div>
			<Field label="Custom share domain" name="customdomain" value={campaign.customdomain} hint="e.g. refer.example.com" />
			<label>
				<input type="checkbox" name="showleaderboard" checked={campaign.showleaderboard === true} /> Show each user's rank among this
				month's referrers on the share page
			</label>
			<Select
				label="Names on the leaderboard"
				name="leaderboardnames"
				value={typeof campaign.leaderboardnames === "string" ? campaign.leaderboardnames : "firstinitial"}
				options={NAME_STYLES}
			/>
			<h2>Reward rules</h2>
			<p class="muted">Edit a rule in place, tick Retire to end it, or fill in as many of the new rows as you need.</p>
			{rules.map((rule, i) => (
				<RuleFields rule={rule} i={i} />
			))}
			<h2>Social actions</h2>
			{actions.map((a, i) => (
				<ActionFields action={a} i={i} />
			))}
			<div>{submit ? <button type="submit">{submit}</button> : <p class="muted">{READ_ONLY_NOTE}</p>}</div>
		</form>
	);
}

const campaignsPath = (appid: string) => `/dashboard/apps/${appid}/campaigns`;

async function renderEdit(c: DashContext, appid: string, campaign: Values, messages: { ok?: string | null; error?: string | null }) {
	const app = await loadApp(c, appid);
	const base = `${campaignsPath(appid)}/${campaign.campaignid}`;
	const csrf = c.var.session.csrf;
	const manager = mayAct(await roleIn(c, appid), "manager");
	return (
		<Page title={`Campaign: ${campaign.campaignname}`} appid={appid} appname={app.name} tab="campaigns" csrf={csrf} {...messages}>
			<p>
				campaignid <code>{campaign.campaignid}</code> · <a href={campaignsPath(appid)}>All campaigns</a>
			</p>
			{campaign.campaignid === app.defaultcampaignid ? (
				<p data-testid="default-campaign">This is the app's default campaign: new users without a referrer join it.</p>
			) : (
				manager && (
					<form method="post" action={`${base}/default`}>
						<Csrf token={csrf} />
						<button type="submit">Make this the default campaign</button>{" "}
						<span class="hint">new users without a referrer or a campaignid join the default campaign</span>
					</form>
				)
			)}
			<p>
				The referral page may be framed by <code data-testid="frameorigin">{app.frameorigin ?? "the landing URL's origin"}</code> (
				<a href={`/dashboard/apps/${appid}#settings`}>change the app's frame origin</a>).
			</p>
			<p>
				<a href={`${base}/messages`}>Edit this campaign's emails</a> (outreach and reminder, in English, French, German and Spanish, with a
				live preview)
			</p>
			<CampaignForm action={base} campaign={campaign} csrf={csrf} submit={manager ? "Save campaign" : null} />
			<h2 id="coupons">Coupon pool</h2>
			<p>
				<strong data-testid="couponsavailable">{campaign.couponsavailable ?? 0}</strong> code(s) left.
			</p>
			{manager && (
				<form class="grid" method="post" action={`${base}/coupons`} enctype="multipart/form-data" aria-labelledby="coupons">
					<Csrf token={csrf} />
					<TextArea label="Codes" name="codes" hint="one per line" rows={4} />
					<div>
						<label for="f-csv">
							Or a CSV file <span class="hint">(first column the code; optional name and details columns)</span>
						</label>
						<input id="f-csv" type="file" name="csv" accept=".csv,text/csv,text/plain" />
					</div>
					<div>
						<button type="submit">Add codes</button>
					</div>
				</form>
			)}
		</Page>
	);
}

export function registerCampaigns(dash: Dash) {
	dash.get("/apps/:appid/campaigns", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const { campaigns } = must(await c.var.api<{ campaigns: Values[] }>("GET", `/apps/${appid}/campaigns`));
		return c.html(
			<Page title="Campaigns" appid={appid} appname={app.name} tab="campaigns" csrf={c.var.session.csrf} {...flash(c)}>
				{mayAct(await roleIn(c, appid), "manager") && (
					<p>
						<a class="button" href={`${campaignsPath(appid)}/new`}>
							New campaign
						</a>
					</p>
				)}
				<Table
					caption="Campaigns"
					head={["Name", "campaignid", "Rules", "Distribution", "Hold days", "Auto-approve", "Coupons left"]}
					numeric={[1, 2, 4, 6]}
					empty={campaigns.length === 0}
				>
					{campaigns.map((k) => (
						<tr>
							<td>
								<a href={`${campaignsPath(appid)}/${k.campaignid}`}>{k.campaignname}</a>
								{k.campaignid === app.defaultcampaignid && <span class="muted"> (default)</span>}
							</td>
							<td class="num">{k.campaignid}</td>
							<td class="num">{k.rewardrules.length}</td>
							<td>{k.distribution}</td>
							<td class="num">{k.holddays}</td>
							<td>{k.autoapprove ? "yes" : "no"}</td>
							<td class="num">{k.couponsavailable}</td>
						</tr>
					))}
				</Table>
			</Page>,
		);
	});

	dash.post("/apps/:appid/campaigns", async (c) => {
		const appid = c.req.param("appid");
		const { body, errors, rows } = campaignFromForm(await c.req.parseBody({ all: true }));
		const res = errors.length ? null : await c.var.api("POST", `/apps/${appid}/campaigns`, body);
		if (res?.ok) return back(c, `${campaignsPath(appid)}/${res.body.campaignid}`, { ok: "Campaign created." });
		const app = await loadApp(c, appid);
		return c.html(
			<Page
				title="New campaign"
				appid={appid}
				appname={app.name}
				tab="campaigns"
				csrf={c.var.session.csrf}
				error={res ? formErrorText(res.error, rows) : errors.join(" ")}
			>
				<CampaignForm action={campaignsPath(appid)} campaign={asTyped(body, rows)} csrf={c.var.session.csrf} submit="Create campaign" />
			</Page>,
			400,
		);
	});

	// One route for /campaigns/new and /campaigns/:campaignid: the router holds no literal beside a parameter (http/router.ts).
	dash.get("/apps/:appid/campaigns/:campaignid", async (c) => {
		const appid = c.req.param("appid");
		if (c.req.param("campaignid") === "new") {
			const app = await loadApp(c, appid);
			return c.html(
				<Page title="New campaign" appid={appid} appname={app.name} tab="campaigns" csrf={c.var.session.csrf} {...flash(c)}>
					<CampaignForm action={campaignsPath(appid)} campaign={{}} csrf={c.var.session.csrf} submit="Create campaign" />
				</Page>,
			);
		}
		const campaign = must(await c.var.api<Values>("GET", `/apps/${appid}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}`));
		return c.html(await renderEdit(c, appid, campaign, flash(c)));
	});

	dash.post("/apps/:appid/campaigns/:campaignid", async (c) => {
		const appid = c.req.param("appid");
		const path = `/apps/${appid}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}`;
		const { body, errors, rows } = campaignFromForm(await c.req.parseBody({ all: true }));
		const res = errors.length ? null : await c.var.api("PATCH", path, body);
		if (res?.ok) return back(c, `/dashboard${path}`, { ok: "Campaign saved." });
		const stored = must(await c.var.api<Values>("GET", path));
		const error = res ? formErrorText(res.error, rows) : errors.join(" ");
		return c.html(await renderEdit(c, appid, asTyped({ ...stored, ...body }, rows), { error }), 400);
	});

	dash.post("/apps/:appid/campaigns/:campaignid/default", async (c) => {
		const appid = c.req.param("appid");
		const campaignid = c.req.param("campaignid");
		// A manager's right (docs/operators.md), apart from the app's settings (owner).
		const res = await c.var.api("POST", `/apps/${appid}/campaigns/${encodeURIComponent(campaignid)}/default`);
		return back(
			c,
			`${campaignsPath(appid)}/${encodeURIComponent(campaignid)}`,
			res.ok ? { ok: "This is now the default campaign." } : { error: res.error },
		);
	});

	dash.post("/apps/:appid/campaigns/:campaignid/coupons", async (c) => {
		const appid = c.req.param("appid");
		const path = `/apps/${appid}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}`;
		const form = await c.req.parseBody();
		const file = form.csv;
		const csv = file instanceof File ? await file.text() : "";
		const coupons = couponsFromText(field(form, "codes"), csv);
		if (coupons.length === 0) return back(c, `/dashboard${path}#coupons`, { error: "Paste codes or choose a CSV file." });
		const res = await c.var.api("POST", `${path}/coupons`, { coupons });
		return back(
			c,
			`/dashboard${path}#coupons`,
			res.ok ? { ok: `Added ${res.body.added} code(s); ${res.body.skipped} already in the pool.` } : { error: res.error },
		);
	});
}
