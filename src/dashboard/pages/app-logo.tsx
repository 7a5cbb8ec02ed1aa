/** @jsxImportSource hono/jsx */

import { LOGO_MAX_BYTES } from "../../domain/logo";
import type { AppInfo, Dash, DashContext } from "../context";
import { back } from "../context";
import { plainError } from "../form-errors";
import { Csrf } from "../layout";

/**
 * The app's logo in the console (issue 48, docs/operators.md "Branding"): the
 * current one, an upload form (multipart, works without script) and a remove
 * button; PUT and DELETE /admin/v1/apps/{appid}/logo behind them. A refused
 * file comes back as the page with the message at the file field.
 */
export function LogoSection({ app, csrf, error }: { app: AppInfo; csrf: string; error?: string | undefined }) {
	const base = `/dashboard/apps/${app.appid}/logo`;
	const invalid = error
		? { "aria-invalid": "true" as const, "aria-describedby": "f-logo-error f-logo-hint" }
		: { "aria-describedby": "f-logo-hint" };
	return (
		<>
			<h2 id="logo">Logo</h2>
			{app.logourl ? (
				<p>
					<img id="current-logo" src={app.logourl} alt={`${app.name}'s logo`} style="max-height:3rem;max-width:12rem" />
				</p>
			) : (
				<p class="muted">No logo yet: the share page, the widget and the emails show the app's name only.</p>
			)}
			<form class="grid" method="post" action={base} enctype="multipart/form-data" aria-labelledby="logo">
				<Csrf token={csrf} />
				<div class={error ? "invalid" : undefined}>
					<label for="f-logo">Logo file</label>
					<input id="f-logo" name="logo" type="file" accept="image/png,image/jpeg,image/webp" required {...invalid} />
					<p id="f-logo-hint" class="hint">
						PNG, JPEG or WebP, at most {LOGO_MAX_BYTES / 1024} KB. SVG is not accepted (it can carry script): export it as a PNG. Shown on
						the share page, the widget and every email; replaces the current logo.
					</p>
					{error && (
						<p id="f-logo-error" class="field-error">
							{error}
						</p>
					)}
				</div>
				<div>
					<button type="submit">Upload logo</button>
				</div>
			</form>
			{app.logourl && (
				<form method="post" action={`${base}/delete`} data-confirm="The share page, the widget and new emails show no logo. Continue?">
					<Csrf token={csrf} />
					<button type="submit" class="secondary">
						Remove logo
					</button>
				</form>
			)}
		</>
	);
}

/** Draws the app's page again, refused, with `logoError` at the file field. */
type Overview = (c: DashContext, app: AppInfo, logoError: string) => Promise<Response>;

export function registerLogo(dash: Dash, overview: Overview, loadApp: (c: DashContext, appid: string) => Promise<AppInfo>) {
	dash.post("/apps/:appid/logo", async (c) => {
		const appid = c.req.param("appid");
		const file = (await c.req.parseBody()).logo;
		const res =
			file instanceof File && file.size > 0
				? await c.var.api("PUT", `/apps/${encodeURIComponent(appid)}/logo`, file)
				: { ok: false, status: 400, error: "Choose an image file to upload." };
		if (res.ok) return back(c, `/dashboard/apps/${appid}#logo`, { ok: "Logo uploaded." });
		if (res.status === 403 || res.status === 404) return back(c, `/dashboard/apps/${appid}`, { error: res.error });
		// The API's words name the field ("logo: ..."): the page says them at the file field.
		return overview(c, await loadApp(c, appid), `The logo was not uploaded: ${plainError(res.error).replace(/^logo: /, "")}`);
	});

	dash.post("/apps/:appid/logo/delete", async (c) => {
		const appid = c.req.param("appid");
		const res = await c.var.api("DELETE", `/apps/${encodeURIComponent(appid)}/logo`);
		return back(c, `/dashboard/apps/${appid}#logo`, res.ok ? { ok: "Logo removed." } : { error: res.error });
	});
}
