/** @jsxImportSource hono/jsx */

import type { Child } from "hono/jsx";
import { appsOfPerson } from "../../db/members";
import { ApiError } from "../../http/errors";
import { must } from "../api";
import { type AppInfo, back, type Dash, type DashContext, field, flash } from "../context";
import { CheckedField, type FormErrors, formErrors } from "../form-errors";
import { Csrf, dateTime, Page, Table } from "../layout";
import { mayAct, roleIn } from "../role";
import { putSecrets, takeSecrets } from "../secret-flash";
import { Secrets, TestKeys } from "./app-keys";
import { LogoSection, registerLogo } from "./app-logo";
import { StripeSection } from "./stripe";

/** Apps: list, create, settings, keys (the private key shown once), rotations. */

export async function loadApp(c: DashContext, appid: string): Promise<AppInfo> {
	return must(await c.var.api<AppInfo>("GET", `/apps/${encodeURIComponent(appid)}`));
}

/** The app body of the admin API; settings (PATCH) also carry the frame origin and the time zone. */
function appForm(form: Record<string, unknown>, settings = false) {
	const out: Record<string, string | null> & { requirepasskeys?: boolean } = {};
	const names = ["name", "landingurl", "webhookurl", "emailsender", ...(settings ? ["frameorigin", "logourl", "accentcolor"] : [])];
	if (settings) out.timezone = field(form, "timezone").trim() || "UTC";
	// An unchecked box sends nothing: the settings form always carries the box, so its absence means "off".
	if (settings) out.requirepasskeys = field(form, "requirepasskeys") === "on";
	for (const name of names) {
		const value = field(form, name).trim();
		out[name] = name === "name" ? value : value || null;
	}
	return out;
}

/** The app's IANA time zone (analytics days); the datalist offers the zones the runtime knows, any valid name is taken. */
function TimeZoneField({ value, error }: { value: string; error?: string | undefined }) {
	const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
	return (
		<div>
			<label for="f-timezone">
				Time zone <span class="hint">(IANA name such as Europe/Paris; analytics count days in it)</span>
			</label>
			<input
				id="f-timezone"
				name="timezone"
				value={value}
				list="timezones"
				autocomplete="off"
				required
				{...(error ? { "aria-invalid": "true", "aria-describedby": "f-timezone-error" } : {})}
			/>
			{error && (
				<p id="f-timezone-error" class="field-error">
					{error}
				</p>
			)}
			<datalist id="timezones">
				{["UTC", ...zones].map((zone) => (
					<option value={zone} />
				))}
			</datalist>
		</div>
	);
}

/** What only an owner (or the superuser) sees of an app: the webhook secret, key rotations and the settings. */
function OwnerSections({ app, csrf, errors, logo }: { app: AppInfo; csrf: string; errors: Record<string, string>; logo: Child }) {
	const base = `/dashboard/apps/${app.appid}`;
	return (
		<>
			<details>
				<summary>Show the webhook signing secret</summary>
				<p class="secret">{app.webhooksecret}</p>
			</details>
			<div class="row">
				<form method="post" action={`${base}/rotate-privatekey`} data-confirm="The current private key stops working. Continue?">
					<Csrf token={csrf} />
					<button type="submit" class="danger">
						Rotate private key
					</button>
				</form>
				<form method="post" action={`${base}/rotate-webhooksecret`} data-confirm="Receivers must switch to the new secret. Continue?">
					<Csrf token={csrf} />
					<button type="submit" class="secondary">
						Rotate webhook secret
					</button>
				</form>
			</div>
			<h2 id="settings">Settings</h2>
			<form class="grid" method="post" action={base} aria-labelledby="settings">
				<Csrf token={csrf} />
				<CheckedField label="Name" name="name" value={app.name} required error={errors.name} />
				<CheckedField label="Landing URL" name="landingurl" type="url" value={app.landingurl} error={errors.landingurl} />
				<CheckedField label="Webhook URL" name="webhookurl" type="url" value={app.webhookurl} error={errors.webhookurl} />
				<CheckedField label="Email sender" name="emailsender" type="email" value={app.emailsender} error={errors.emailsender} />
				<CheckedField
					error={errors.frameorigin}
					label="Frame origin"
					name="frameorigin"
					type="url"
					value={app.frameorigin}
					hint="the site allowed to frame the referral page, e.g. https://shop.example.com; empty: the landing URL's"
				/>
				<TimeZoneField value={app.timezone} error={errors.timezone} />
				<div class="two">
					<CheckedField
						error={errors.logourl}
						label="Logo URL"
						name="logourl"
						type="url"
						value={app.logourl}
						hint="https only; on the share page, the widget and every email; or upload a file under Logo"
					/>
					<CheckedField
						error={errors.accentcolor}
						label="Accent colour"
						name="accentcolor"
						value={app.accentcolor}
						hint="hex, e.g. #1a56db; empty: the service's own"
						attrs={{ pattern: "#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})", placeholder: "#1a56db" }}
					/>
				</div>
				<div class="check">
					<input
						id="f-requirepasskeys"
						name="requirepasskeys"
						type="checkbox"
						checked={app.requirepasskeys}
						aria-describedby="h-requirepasskeys"
					/>
					<label for="f-requirepasskeys">Members must sign in with a passkey</label>
					<p id="h-requirepasskeys" class="hint">
						A member without a passkey yet signs in with their password and must register one before any page (docs/operators.md).
					</p>
				</div>
				<div>
					<button type="submit">Save settings</button>
				</div>
			</form>
			{logo}
			<StripeSection app={app} csrf={csrf} />
		</>
	);
}

function MemberHome(props: {
	csrf: string;
	apps: { appid: string; name: string; role: string }[];
	ok: string | null;
	error: string | null;
}) {
	return (
		<Page title="Your apps" csrf={props.csrf} ok={props.ok} error={props.error}>
			<Table caption="Your apps" head={["Name", "appid", "Your role"]} empty={props.apps.length === 0}>
				{props.apps.map((app) => (
					<tr>
						<td>
							<a href={`/dashboard/apps/${app.appid}`}>{app.name}</a>
						</td>
						<td class="mono">{app.appid}</td>
						<td>{app.role}</td>
					</tr>
				))}
			</Table>
		</Page>
	);
}

/** The settings form's labels, by field. */
const SETTINGS_LABELS: Record<string, string> = {
	name: "Name",
	landingurl: "Landing URL",
	webhookurl: "Webhook URL",
	emailsender: "Email sender",
	frameorigin: "Frame origin",
	timezone: "Time zone",
	logourl: "Logo URL",
	accentcolor: "Accent colour",
};

/** The create-app form's labels, by field: the words its errors are said in. */
const APP_LABELS: Record<string, string> = {
	name: "Name",
	landingurl: "Landing URL",
	webhookurl: "Webhook URL",
	emailsender: "Email sender",
};

/** The superuser's apps and the create form; after a refused create, with what was typed and each error at its field. */
async function appsPage(
	c: DashContext,
	messages: { ok?: string | null; error?: string | null },
	typed: Record<string, string | null | boolean | undefined> = {},
	errors: FormErrors = { summary: "", fields: {} },
	status: 200 | 400 = 200,
) {
	const { apps } = must(await c.var.api<{ apps: AppInfo[] }>("GET", "/apps"));
	const value = (name: string) => (typeof typed[name] === "string" ? String(typed[name]) : "");
	return c.html(
		<Page title="Apps" csrf={c.var.session.csrf} ok={messages.ok} error={errors.summary || messages.error}>
			<Table caption="Apps" head={["Name", "appid", "apikey", "Created"]} empty={apps.length === 0}>
				{apps.map((app) => (
					<tr>
						<td>
							<a href={`/dashboard/apps/${app.appid}`}>{app.name}</a>
						</td>
						<td class="mono">{app.appid}</td>
						<td class="mono">{app.apikey}</td>
						<td>{dateTime(app.createdat)}</td>
					</tr>
				))}
			</Table>
			<h2 id="new-app">Create an app</h2>
			<form class="grid" method="post" action="/dashboard/apps" aria-labelledby="new-app">
				<Csrf token={c.var.session.csrf} />
				<CheckedField label="Name" name="name" value={value("name")} required error={errors.fields.name} />
				<CheckedField
					label="Landing URL"
					name="landingurl"
					type="url"
					value={value("landingurl")}
					hint="where share links send friends"
					error={errors.fields.landingurl}
				/>
				<CheckedField
					label="Webhook URL"
					name="webhookurl"
					type="url"
					value={value("webhookurl")}
					hint="optional"
					error={errors.fields.webhookurl}
				/>
				<CheckedField
					label="Email sender"
					name="emailsender"
					type="email"
					value={value("emailsender")}
					hint="optional; without it the app sends no email"
					error={errors.fields.emailsender}
				/>
				<div>
					<button type="submit">Create app</button>
				</div>
			</form>
		</Page>,
		status,
	);
}

export function registerApps(dash: Dash) {
	dash.get("/", async (c) => {
		const { personid } = c.var.session;
		// A member sees the apps they are a member of, with their role; only the superuser lists and creates apps.
		if (personid) return c.html(<MemberHome csrf={c.var.session.csrf} apps={await appsOfPerson(c.env.DB, personid)} {...flash(c)} />);
		return appsPage(c, flash(c));
	});

	dash.post("/apps", async (c) => {
		const typed = appForm(await c.req.parseBody());
		const res = await c.var.api("POST", "/apps", typed);
		// Refused: the form again as typed, each mistake next to its field (issue 48), nothing created.
		if (!res.ok) return appsPage(c, {}, typed, formErrors(res, APP_LABELS, "The app was not created"), 400);
		// Post/redirect/get: the keys are shown once by the page redirected to, so a reload creates no second app.
		await putSecrets(c, c.var.session.id, { kind: "created", ...res.body });
		return back(c, `/dashboard/apps/${res.body.appid}/keys`, { ok: "The app was created." });
	});

	/** The app's page; after a refused save, with what was typed in the settings (not the stored values) and the error. */
	const overview = async (
		c: DashContext,
		app: AppInfo,
		messages: { ok?: string | null; error?: string | null },
		status: 200 | 400 = 200,
		errors: Record<string, string> = {},
		logoError?: string,
	) => {
		const csrf = c.var.session.csrf;
		// The webhook secret comes back only to an owner (or the superuser): the settings and keys are theirs alone.
		const owner = app.webhooksecret !== null;
		// The logo is a manager's too (admin/rights.ts): an owner finds it with the other branding settings.
		const logo = owner || mayAct(await roleIn(c, app.appid), "manager") ? <LogoSection app={app} csrf={csrf} error={logoError} /> : null;
		return c.html(
			<Page title={app.name} appid={app.appid} appname={app.name} tab="overview" csrf={csrf} {...messages}>
				<h2>Keys</h2>
				<dl class="props">
					<dt>appid</dt>
					<dd class="mono">{app.appid}</dd>
					<dt>apikey</dt>
					<dd class="mono">{app.apikey}</dd>
					<dt>privatekey</dt>
					<dd>Shown only at creation or rotation.</dd>
					<dt>Default campaign</dt>
					<dd>{app.defaultcampaignid ?? "none yet"}</dd>
				</dl>
				<TestKeys app={app} csrf={csrf} owner={owner} />
				{owner ? <OwnerSections app={app} csrf={csrf} errors={errors} logo={logo} /> : logo}
			</Page>,
			status,
		);
	};

	dash.get("/apps/:appid", async (c) => overview(c, await loadApp(c, c.req.param("appid")), flash(c)));

	dash.post("/apps/:appid", async (c) => {
		const appid = c.req.param("appid");
		const typed = appForm(await c.req.parseBody(), true);
		const stored = await loadApp(c, appid);
		// An uploaded logo's URL left as it was is not sent again (locally it is http, which the field would refuse).
		const sent = typed.logourl === stored.logourl ? { ...typed, logourl: undefined } : typed;
		const res = await c.var.api("PATCH", `/apps/${encodeURIComponent(appid)}`, sent);
		if (res.ok) return back(c, `/dashboard/apps/${appid}`, { ok: "Settings saved." });
		// Shown again as typed, so a fix is one field, not the whole form again.
		const shown: AppInfo = {
			...stored,
			name: typed.name || stored.name,
			landingurl: typed.landingurl ?? null,
			webhookurl: typed.webhookurl ?? null,
			emailsender: typed.emailsender ?? null,
			frameorigin: typed.frameorigin ?? null,
			logourl: typed.logourl ?? null,
			accentcolor: typed.accentcolor ?? null,
			timezone: typed.timezone ?? stored.timezone,
			requirepasskeys: typed.requirepasskeys ?? stored.requirepasskeys,
		};
		const refused = formErrors(res, SETTINGS_LABELS, "The settings were not saved");
		return overview(c, shown, { error: refused.summary }, 400, refused.fields);
	});

	registerLogo(dash, (c, app, logoError) => overview(c, app, {}, 400, {}, logoError), loadApp);

	dash.post("/apps/:appid/rotate-privatekey", async (c) => {
		const appid = c.req.param("appid");
		const res = await c.var.api("POST", `/apps/${encodeURIComponent(appid)}/rotate-privatekey`);
		if (!res.ok) return back(c, `/dashboard/apps/${appid}`, { error: res.error });
		// Post/redirect/get: reloading the page that shows the new key must not rotate it again.
		await putSecrets(c, c.var.session.id, { kind: "rotated", appid, privatekey: res.body.privatekey });
		return back(c, `/dashboard/apps/${appid}/keys`, { ok: "Private key rotated. The old private key no longer works." });
	});

	/** The one-time page of new secrets; a second look (a reload) finds the flash used up. */
	dash.get("/apps/:appid/keys", async (c) => {
		const appid = c.req.param("appid");
		// New keys are an owner's: anyone else is refused, as the admin API refuses them the rotation.
		if ((await loadApp(c, appid)).webhooksecret === null) throw new ApiError(403, "forbidden", "The app's keys are for its owners.");
		const secrets = await takeSecrets(c, c.var.session.id, appid);
		if (!secrets) {
			return back(c, `/dashboard/apps/${appid}`, {
				error: "New keys are shown only once, right after they are made. Rotate the private key again if it was not copied.",
			});
		}
		const created = secrets.kind === "created";
		const title = created ? "App created" : secrets.kind === "testkeys" ? "Test keys rotated" : "Private key rotated";
		const heading = created ? "Its keys" : secrets.kind === "testkeys" ? "The new test keys" : "The new private key";
		return c.html(
			<Page title={title} appid={created ? undefined : appid} tab="overview" csrf={c.var.session.csrf} {...flash(c)}>
				<Secrets title={heading} {...secrets} />
			</Page>,
		);
	});

	dash.post("/apps/:appid/rotate-testkeys", async (c) => {
		const appid = c.req.param("appid");
		// The button says what rotating breaks and the browser asked to confirm: a rotation, never a refused re-creation (409 testkeys_exist).
		const res = await c.var.api("POST", `/apps/${encodeURIComponent(appid)}/testkeys`, { rotate: true });
		if (!res.ok) return back(c, `/dashboard/apps/${appid}`, { error: res.error });
		// Post/redirect/get, as the private key's rotation: the new pair is shown once.
		await putSecrets(c, c.var.session.id, {
			kind: "testkeys",
			appid,
			testapikey: res.body.testapikey,
			testprivatekey: res.body.testprivatekey,
		});
		return back(c, `/dashboard/apps/${appid}/keys`, { ok: "Test keys rotated. The old test keys no longer work." });
	});

	dash.post("/apps/:appid/rotate-webhooksecret", async (c) => {
		const appid = c.req.param("appid");
		const res = await c.var.api("POST", `/apps/${encodeURIComponent(appid)}/rotate-webhooksecret`);
		return back(c, `/dashboard/apps/${appid}`, res.ok ? { ok: "Webhook secret rotated." } : { error: res.error });
	});
}
