import type { Context, Hono } from "hono";
import { dashboardPathOr } from "../domain/redirect";
import type { Api } from "./api";
import type { Session } from "./session";

/** What every signed-in dashboard handler has: the session (for CSRF) and the admin API client. */
export type DashEnv = { Bindings: Env; Variables: { session: Session; api: Api } };
export type Dash = Hono<DashEnv>;
export type DashContext = Context<DashEnv>;

/** The flash messages a redirect carried (`?ok=` / `?error=`). */
export const flash = (c: DashContext) => ({ ok: c.req.query("ok") ?? null, error: c.req.query("error") ?? null });

/** Post/redirect/get: back to `path` with a message; a path that would leave /dashboard once normalized goes to /dashboard. */
export function back(c: DashContext, path: string, message: { ok?: string; error?: string }) {
	const url = new URL(dashboardPathOr(path, "/dashboard"), "http://x");
	if (message.ok) url.searchParams.set("ok", message.ok);
	if (message.error) url.searchParams.set("error", message.error);
	return c.redirect(`${url.pathname}${url.search}${url.hash}`, 303);
}

/** One text field of a parsed form. */
export const field = (form: Record<string, unknown>, name: string): string => {
	const value = form[name];
	return typeof value === "string" ? value : "";
};

export interface AppInfo {
	appid: string;
	name: string;
	apikey: string;
	landingurl: string | null;
	webhookurl: string | null;
	emailsender: string | null;
	/** null unless the viewer is an owner (or the superuser). */
	webhooksecret: string | null;
	defaultcampaignid: number | null;
	frameorigin: string | null;
	/** The app's logo (https) and accent colour (#rrggbb) on its share page, widget and emails. */
	logourl: string | null;
	accentcolor: string | null;
	/** IANA time zone of the app's analytics days. */
	timezone: string;
	/** Members sign in with a passkey (docs/operators.md "Passkeys"). */
	requirepasskeys: boolean;
	/** The test pair's apikey (docs/test-mode.md); null until the app has test keys. */
	testapikey?: string | null;
	/** The Stripe connection, never its secrets (docs/stripe.md). */
	stripe?: {
		connected: boolean;
		secretkeylast4?: string;
		eventname?: string;
		webhookurl: string;
		events?: Record<string, number>;
		/** Stripe events that paid nothing for a reason the operator acts on, newest first (docs/stripe.md). */
		cases?: { eventid: string; kind: string; customer: string | null; userkey: string | null; detail: string | null; at: string }[];
	};
	createdat: string;
}
