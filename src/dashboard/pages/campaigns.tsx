/** @jsxImportSource hono/jsx */
import { must } from "../api";
import { apiFieldName, checkCampaign, type FieldProblem } from "../campaign-check";
import { newCampaign, typedFromForm, typedFromStored } from "../campaign-typed";
import { back, type Dash, type DashContext, field, flash } from "../context";
import { campaignFromForm, couponsFromText } from "../forms";
import { Csrf, Page, Table } from "../layout";
import { mayAct, roleIn } from "../role";
import { loadApp } from "./apps";
import { type BuilderProps, CampaignForm } from "./campaign-form";
import { CampaignPreview, previewHtml } from "./campaign-preview";
import { CouponForm, type CouponFormState, couponError, NO_CODES } from "./coupon-form";

/** Campaigns: the list (active and archived), the builder (campaign-form.tsx), archive, restore, delete, coupon pool upload. */

type Values = Record<string, any>;

const campaignsPath = (appid: string) => `/dashboard/apps/${appid}/campaigns`;

/** The builder and the preview beside it. */
export async function Builder(c: DashContext, props: BuilderProps) {
	const app = await loadApp(c, c.req.param("appid") ?? "");
	const html = await previewHtml(props.typed, app, new URL(c.req.url).origin);
	return (
		<div class="builder-layout">
			<CampaignForm {...props} />
			<CampaignPreview typed={props.typed} html={html} />
		</div>
	);
}

export async function renderEdit(
	c: DashContext,
	appid: string,
	campaign: Values,
	messages: { ok?: string | null; error?: string | null },
	builder?: Partial<BuilderProps>,
	coupons?: CouponFormState,
) {
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
			{campaign.archived && (
				<p class="flash warn" data-testid="archived-note">
					Archived on {String(campaign.archivedat ?? "").slice(0, 10)}: it records no new conversion and grants nothing new; its rewards and
					history stay. Restore it to use it again.
				</p>
			)}
			{
				await Builder(c, {
					action: base,
					preview: `${base}/preview`,
					typed: typedFromStored(campaign),
					csrf,
					submit: manager ? "Save campaign" : null,
					...builder,
				})
			}
			{manager && <ArchiveForms base={base} campaign={campaign} csrf={csrf} />}
			<h2 id="coupons">Coupon pool</h2>
			<p>
				<strong data-testid="couponsavailable">{campaign.couponsavailable ?? 0}</strong> code(s) left.
			</p>
			{manager && <CouponForm action={`${base}/coupons`} csrf={csrf} state={coupons} />}
		</Page>
	);
}

/** The campaign page again (new or edit) with what was typed and what to say about it, status 400 when refused. */
async function again(
	c: DashContext,
	campaignid: string | null,
	builder: Omit<BuilderProps, "action" | "preview" | "csrf" | "submit">,
	status: 200 | 400,
) {
	const appid = c.req.param("appid") ?? "";
	const csrf = c.var.session.csrf;
	if (campaignid && campaignid !== "new") {
		const stored = must(await c.var.api<Values>("GET", `/apps/${appid}/campaigns/${encodeURIComponent(campaignid)}`));
		builder.typed.campaignid = String(stored.campaignid);
		return c.html(await renderEdit(c, appid, stored, {}, builder), status);
	}
	const app = await loadApp(c, appid);
	const path = campaignsPath(appid);
	return c.html(
		<Page title="New campaign" appid={appid} appname={app.name} tab="campaigns" csrf={csrf}>
			{await Builder(c, { action: path, preview: `${path}/new/preview`, csrf, submit: "Create campaign", ...builder })}
		</Page>,
		status,
	);
}

/**
 * Saves the builder's form: every problem the form can tell, at once and on
 * its field, and the warnings not yet confirmed keep it from being sent;
 * what the admin API still refuses is put on the fields it names. Nothing
 * typed is lost: a refused form comes back as typed (campaign-typed.ts).
 */
async function saveCampaign(c: DashContext, campaignid: string | null) {
	const appid = c.req.param("appid") ?? "";
	const form = await c.req.parseBody({ all: true });
	const typed = typedFromForm(form);
	const path = `/apps/${appid}/campaigns${campaignid ? `/${encodeURIComponent(campaignid)}` : ""}`;
	const stored = campaignid ? must(await c.var.api<Values>("GET", path)) : null;
	const { problems, warnings } = checkCampaign(typed, {
		now: new Date(),
		storedEnd: stored?.campaignenddate ?? null,
		storedStart: stored?.campaignstartdate ?? null,
	});
	const { body, errors, rows } = campaignFromForm(form);
	const other = [...errors];
	if (problems.length === 0 && warnings.length === 0 && other.length === 0) {
		const res = await c.var.api(campaignid ? "PATCH" : "POST", path, body);
		if (res.ok) {
			const id = campaignid ?? String(res.body.campaignid);
			return back(c, `${campaignsPath(appid)}/${encodeURIComponent(id)}`, { ok: campaignid ? "Campaign saved." : "Campaign created." });
		}
		const named: { field: string; message: string }[] = Array.isArray(res.body?.errors) ? res.body.errors : [];
		for (const e of named) {
			const at = apiFieldName(String(e.field), rows);
			if (at) problems.push({ field: at, message: `${e.field}: ${e.message}` } satisfies FieldProblem);
			else other.push(`${e.field}: ${e.message}`);
		}
		if (named.length === 0) other.push(res.error);
	}
	return again(c, campaignid, { typed, problems, other, warnings }, 400);
}

/** The preview of what was typed; its problems are shown, its warnings wait for a save. */
async function previewOf(c: DashContext, campaignid: string) {
	const typed = typedFromForm(await c.req.parseBody({ all: true }));
	const { problems } = checkCampaign(typed, { now: new Date() });
	return again(c, campaignid, { typed, problems }, 200);
}

/** Archive or restore, and delete: each a form of its own that works without script (app.js asks first where it runs). */
function ArchiveForms({ base, campaign, csrf }: { base: string; campaign: Values; csrf: string }) {
	return (
		<section aria-labelledby="archive-title">
			<h2 id="archive-title">Archive or delete</h2>
			<p class="muted">
				An archived campaign records no new conversion and grants nothing new; its rewards and history stay, and it leaves the pickers. A
				campaign is deleted only while nothing references it (no user, conversion or reward, and not the default).
			</p>
			<div class="row">
				{campaign.archived ? (
					<form method="post" action={`${base}/restore`}>
						<Csrf token={csrf} />
						<button type="submit">Restore this campaign</button>
					</form>
				) : (
					<form
						method="post"
						action={`${base}/archive`}
						data-confirm="Archive it? Conversions against it will be refused until it is restored."
					>
						<Csrf token={csrf} />
						<button type="submit" class="secondary">
							Archive this campaign
						</button>
					</form>
				)}
				<form method="post" action={`${base}/delete`} data-confirm="Delete it for good?">
					<Csrf token={csrf} />
					<button type="submit" class="danger">
						Delete this campaign
					</button>
				</form>
			</div>
		</section>
	);
}

const PAID_AS: Record<string, string> = { InstoreCredits: "In-app credit", Coupon: "Coupon code", Stripe: "Stripe balance" };

function CampaignTable({
	appid,
	campaigns,
	defaultid,
	caption,
}: {
	appid: string;
	campaigns: Values[];
	defaultid: number | null;
	caption: string;
}) {
	return (
		<Table
			caption={caption}
			head={["Name", "campaignid", "Rewards", "Paid as", "Hold days", "Auto-approve", "Coupons left"]}
			numeric={[1, 2, 4, 6]}
			empty={campaigns.length === 0}
		>
			{campaigns.map((k) => (
				<tr>
					<td>
						<a href={`${campaignsPath(appid)}/${k.campaignid}`}>{k.campaignname}</a>
						{k.campaignid === defaultid && <span class="muted"> (default)</span>}
					</td>
					<td class="num">{k.campaignid}</td>
					<td class="num">{k.rewardrules.length}</td>
					<td>{PAID_AS[k.distribution] ?? k.distribution}</td>
					<td class="num">{k.holddays}</td>
					<td>{k.autoapprove ? "yes" : "no"}</td>
					<td class="num">{k.couponsavailable}</td>
				</tr>
			))}
		</Table>
	);
}

export function registerCampaigns(dash: Dash) {
	dash.get("/apps/:appid/campaigns", async (c) => {
		const appid = c.req.param("appid");
		const app = await loadApp(c, appid);
		const { campaigns } = must(await c.var.api<{ campaigns: Values[] }>("GET", `/apps/${appid}/campaigns?limit=200`));
		const archived = campaigns.filter((k) => k.archived);
		return c.html(
			<Page title="Campaigns" appid={appid} appname={app.name} tab="campaigns" csrf={c.var.session.csrf} {...flash(c)}>
				{mayAct(await roleIn(c, appid), "manager") && (
					<p>
						<a class="button" href={`${campaignsPath(appid)}/new`}>
							New campaign
						</a>
					</p>
				)}
				<CampaignTable
					appid={appid}
					campaigns={campaigns.filter((k) => !k.archived)}
					defaultid={app.defaultcampaignid}
					caption="Campaigns"
				/>
				<h2 id="archived">Archived</h2>
				{archived.length === 0 ? (
					<p class="muted" data-testid="no-archived">
						No archived campaign. Archive one from its page: it then records nothing new and leaves the pickers.
					</p>
				) : (
					<div data-testid="archived-campaigns">
						<CampaignTable appid={appid} campaigns={archived} defaultid={app.defaultcampaignid} caption="Archived campaigns" />
					</div>
				)}
			</Page>,
		);
	});

	dash.post("/apps/:appid/campaigns", (c) => saveCampaign(c, null));

	// One route for /campaigns/new and /campaigns/:campaignid: the router holds no literal beside a parameter (http/router.ts).
	dash.get("/apps/:appid/campaigns/:campaignid", async (c) => {
		const appid = c.req.param("appid");
		if (c.req.param("campaignid") === "new") {
			const app = await loadApp(c, appid);
			const path = campaignsPath(appid);
			return c.html(
				<Page title="New campaign" appid={appid} appname={app.name} tab="campaigns" csrf={c.var.session.csrf} {...flash(c)}>
					{
						await Builder(c, {
							action: path,
							preview: `${path}/new/preview`,
							typed: newCampaign(),
							csrf: c.var.session.csrf,
							submit: "Create campaign",
						})
					}
				</Page>,
			);
		}
		const campaign = must(await c.var.api<Values>("GET", `/apps/${appid}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}`));
		return c.html(await renderEdit(c, appid, campaign, flash(c)));
	});

	dash.post("/apps/:appid/campaigns/:campaignid", (c) => saveCampaign(c, c.req.param("campaignid")));
	/** What was typed, previewed (nothing saved): the page without script, the preview section for app.js. */
	dash.post("/apps/:appid/campaigns/:campaignid/preview", (c) => previewOf(c, c.req.param("campaignid")));

	for (const [verb, method, suffix, done] of [
		["archive", "POST", "/archive", "Campaign archived: it records no new conversion until it is restored."],
		["restore", "POST", "/restore", "Campaign restored: it records conversions again."],
		["delete", "DELETE", "", "Campaign deleted."],
	] as const) {
		dash.post(`/apps/:appid/campaigns/:campaignid/${verb}`, async (c) => {
			const appid = c.req.param("appid");
			const path = `/apps/${appid}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}`;
			const res = await c.var.api(method, `${path}${suffix}`);
			if (res.ok) return back(c, verb === "delete" ? campaignsPath(appid) : `/dashboard${path}`, { ok: done });
			return back(c, `/dashboard${path}`, { error: res.error });
		});
	}

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
		const codes = field(form, "codes");
		const coupons = couponsFromText(codes, csv);
		const res = coupons.length > 0 ? await c.var.api("POST", `${path}/coupons`, { coupons }) : null;
		if (res?.ok)
			return back(c, `/dashboard${path}#coupons`, { ok: `Added ${res.body.added} code(s); ${res.body.skipped} already in the pool.` });
		if (res && res.status !== 400) return back(c, `/dashboard${path}#coupons`, { error: res.error });
		// Refused: the page again with the codes as typed and the reason at the box (issue 48), nothing added.
		const error = res ? couponError(res, coupons, csv !== "") : NO_CODES;
		const stored = must(await c.var.api<Values>("GET", path));
		return c.html(await renderEdit(c, appid, stored, { error }, undefined, { codes, error }), 400);
	});
}
