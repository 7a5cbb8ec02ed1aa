/** @jsxImportSource hono/jsx */

import type { AppInfo } from "../context";
import { back, type Dash, field } from "../context";
import { Csrf, dateTime, Field, Table } from "../layout";

/** The case kinds the operator acts on, as the counts name them (docs/stripe.md "What the operator sees"). */
const CASE_COUNTS: [string, string][] = [
	["unlinked_email", "Payments whose email is a user's who never linked that Stripe customer (paid nothing)"],
	["dispute_opened", "Disputes opened (their rewards held Under Review)"],
	["dispute_lost", "Disputes lost (their rewards reversed)"],
	["dispute_won", "Disputes won (their rewards restored)"],
];

/** What paid nothing, or was held, for a reason the operator acts on: counts, then the recent cases. */
function StripeCases({ stripe }: { stripe: NonNullable<AppInfo["stripe"]> }) {
	const events = stripe.events ?? {};
	const cases = stripe.cases ?? [];
	return (
		<>
			<h3 id="stripe-cases">Needs attention</h3>
			<dl class="props" data-testid="stripe-case-counts">
				{CASE_COUNTS.map(([outcome, label]) => (
					<>
						<dt>{label}</dt>
						<dd>{events[outcome] ?? 0}</dd>
					</>
				))}
			</dl>
			<Table caption="Recent Stripe cases" head={["When", "Case", "Stripe event", "Customer", "User", "Detail"]} empty={cases.length === 0}>
				{cases.map((k) => (
					<tr>
						<td>{dateTime(k.at)}</td>
						<td>{k.kind}</td>
						<td class="mono">{k.eventid}</td>
						<td class="mono">{k.customer ?? ""}</td>
						<td class="mono">{k.userkey ?? ""}</td>
						<td>{k.detail ?? ""}</td>
					</tr>
				))}
			</Table>
		</>
	);
}

/** The app page's Stripe section (owners): connect with the keys, the webhook URL to paste into Stripe, disconnect. */
export function StripeSection({ app, csrf }: { app: AppInfo; csrf: string }) {
	const base = `/dashboard/apps/${app.appid}/stripe`;
	const stripe = app.stripe;
	return (
		<section aria-labelledby="stripe">
			<h2 id="stripe">Stripe</h2>
			<p>
				{stripe?.connected
					? `Connected with the key ending ${stripe.secretkeylast4}; payments become ${stripe.eventname} conversions.`
					: "Not connected. Rewards of Stripe campaigns wait until it is (docs/stripe.md)."}
			</p>
			<dl class="props">
				<dt>Webhook endpoint for Stripe</dt>
				<dd class="mono" data-testid="stripe-webhookurl">
					{stripe?.webhookurl}
				</dd>
			</dl>
			{stripe?.connected && <StripeCases stripe={stripe} />}
			<form class="grid" method="post" action={base} aria-labelledby="stripe">
				<Csrf token={csrf} />
				<Field
					label="Secret key"
					name="secretkey"
					type="password"
					hint="sk_test_..., sk_live_... or a restricted rk_... key"
					required
					attrs={{ autocomplete: "off" }}
				/>
				<Field
					label="Webhook signing secret"
					name="webhooksecret"
					type="password"
					hint="whsec_... of the endpoint above"
					required
					attrs={{ autocomplete: "off" }}
				/>
				<Field
					label="Event name"
					name="eventname"
					value={stripe?.eventname ?? "Transaction"}
					hint="the eventname of a Stripe payment's conversion"
				/>
				<div>
					<button type="submit">{stripe?.connected ? "Replace the keys" : "Connect Stripe"}</button>
				</div>
			</form>
			{stripe?.connected && (
				<form
					method="post"
					action={`${base}/disconnect`}
					data-confirm="Stripe events and payouts stop until it is connected again. Continue?"
				>
					<Csrf token={csrf} />
					<button type="submit" class="danger">
						Disconnect Stripe
					</button>
				</form>
			)}
		</section>
	);
}

export function registerStripe(dash: Dash) {
	dash.post("/apps/:appid/stripe", async (c) => {
		const appid = c.req.param("appid");
		const form = await c.req.parseBody();
		const stripe = {
			secretkey: field(form, "secretkey"),
			webhooksecret: field(form, "webhooksecret"),
			eventname: field(form, "eventname") || undefined,
		};
		const res = await c.var.api("PATCH", `/apps/${encodeURIComponent(appid)}`, { stripe });
		return back(c, `/dashboard/apps/${appid}#stripe`, res.ok ? { ok: "Stripe connected." } : { error: res.error });
	});

	dash.post("/apps/:appid/stripe/disconnect", async (c) => {
		const appid = c.req.param("appid");
		const res = await c.var.api("PATCH", `/apps/${encodeURIComponent(appid)}`, { stripe: null });
		return back(c, `/dashboard/apps/${appid}#stripe`, res.ok ? { ok: "Stripe disconnected." } : { error: res.error });
	});
}
