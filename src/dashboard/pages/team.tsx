/** @jsxImportSource hono/jsx */
import { must } from "../api";
import { back, type Dash, type DashContext, field, flash } from "../context";
import { CheckedField, formErrors, plainError } from "../form-errors";
import { Csrf, dateTime, Field, Page, Select, Table } from "../layout";
import { loadApp } from "./apps";

/** Team (owners): members with their roles and invitations, and app-scoped admin tokens. */

type Values = Record<string, any>;
const ROLE_OPTIONS: [string, string][] = [
	["viewer", "viewer: reads everything"],
	["reviewer", "reviewer: also reviews rewards, redelivers"],
	["manager", "manager: also campaigns, coupons, imports"],
	["owner", "owner: everything of the app"],
];

export function registerTeam(dash: Dash) {
	dash.get("/apps/:appid/team", async (c) => teamPage(c, c.req.param("appid"), flash(c)));

	/** The team page; after a refused invitation, with what was typed and the error at its field (issue 48). */
	const teamPage = async (
		c: DashContext,
		appid: string,
		messages: { ok?: string | null; error?: string | null },
		invite: { email: string; role: string; error?: string } = { email: "", role: "viewer" },
		status: 200 | 400 = 200,
	) => {
		const app = await loadApp(c, appid);
		const { members } = must(await c.var.api<{ members: Values[] }>("GET", `/apps/${appid}/members`));
		const { tokens } = must(await c.var.api<{ tokens: Values[] }>("GET", `/apps/${appid}/tokens`));
		const csrf = c.var.session.csrf;
		const base = `/dashboard/apps/${appid}/team`;
		return c.html(
			<Page title="Team" appid={appid} appname={app.name} tab="team" csrf={csrf} {...messages}>
				<Table caption="Members" head={["Email", "Role", "State", "Passkeys", "Since", ""]} empty={members.length === 0}>
					{members.map((m) => (
						<tr>
							<td>{m.email}</td>
							<td>
								<form method="post" action={`${base}/members/${m.memberid}`} class="row">
									<Csrf token={csrf} />
									<Select label={`Role of ${m.email}`} name="role" id={`role-${m.memberid}`} value={m.role} options={ROLE_OPTIONS} />
									<button type="submit" class="secondary">
										Change
									</button>
								</form>
							</td>
							<td>{m.state}</td>
							<td class="num">{m.passkeys}</td>
							<td>{dateTime(m.createdat)}</td>
							<td>
								<form method="post" action={`${base}/members/${m.memberid}/remove`} data-confirm={`Remove ${m.email}?`}>
									<Csrf token={csrf} />
									<button type="submit" class="danger">
										Remove
									</button>
								</form>
							</td>
						</tr>
					))}
				</Table>
				<h2 id="invite">Invite a member</h2>
				<form class="grid" method="post" action={`${base}/members`} aria-labelledby="invite">
					<Csrf token={csrf} />
					<CheckedField label="Email" name="email" type="email" value={invite.email} required error={invite.error} />
					<Select label="Role" name="role" id="f-invite-role" value={invite.role} options={ROLE_OPTIONS} />
					<div>
						<button type="submit">Invite</button>
					</div>
				</form>
				<h2 id="tokens">Admin tokens</h2>
				<Table caption="Admin tokens" head={["Name", "Role", "Created", "Revoked", ""]} empty={tokens.length === 0}>
					{tokens.map((t) => (
						<tr>
							<td>{t.name}</td>
							<td>{t.role}</td>
							<td>{dateTime(t.createdat)}</td>
							<td>{t.revokedat ? dateTime(t.revokedat) : "—"}</td>
							<td>
								{!t.revokedat && (
									<form method="post" action={`${base}/tokens/${t.tokenid}/revoke`} data-confirm={`Revoke ${t.name}?`}>
										<Csrf token={csrf} />
										<button type="submit" class="danger">
											Revoke
										</button>
									</form>
								)}
							</td>
						</tr>
					))}
				</Table>
				<form class="grid" method="post" action={`${base}/tokens`} aria-labelledby="tokens">
					<Csrf token={csrf} />
					<Field label="Token name" name="name" id="f-token-name" required />
					<Select label="Token role" name="role" id="f-token-role" value="viewer" options={ROLE_OPTIONS} />
					<div>
						<button type="submit">Create token</button>
					</div>
				</form>
			</Page>,
			status,
		);
	};

	/** A new token is shown in the answer itself, once: it is a credential, never put in a redirect's URL. */
	const shownOnce = (c: DashContext, appid: string, title: string, label: string, secret: string) =>
		c.html(
			<Page title={title} appid={appid} tab="team" csrf={c.var.session.csrf}>
				<p>Copy it now: it is shown only this once.</p>
				<dl class="props">
					<dt>{label}</dt>
					<dd class="secret" data-testid="shown-once">
						{secret}
					</dd>
				</dl>
				<p>
					<a href={`/dashboard/apps/${appid}/team`}>Back to the team</a>
				</p>
			</Page>,
		);

	dash.post("/apps/:appid/team/members", async (c) => {
		const appid = c.req.param("appid");
		const form = await c.req.parseBody();
		const typed = { email: field(form, "email"), role: field(form, "role") };
		const res = await c.var.api("POST", `/apps/${appid}/members`, typed);
		if (!res.ok) {
			// The form again as typed, the reason at the email (the field an invitation can be refused for), nothing sent.
			const refused = formErrors(res, { email: "Email", role: "Role" }, "No invitation was sent");
			const error = refused.fields.email ?? refused.fields.role ?? plainError(res.error);
			return teamPage(c, appid, { error: refused.summary }, { ...typed, error }, 400);
		}
		// The link went to the address only: holding the email is the proof of it.
		return back(c, `/dashboard/apps/${appid}/team`, { ok: `Invitation emailed to ${res.body.email} (valid 7 days, one use).` });
	});

	dash.post("/apps/:appid/team/members/:memberid", async (c) => {
		const { appid, memberid } = c.req.param();
		const res = await c.var.api("PATCH", `/apps/${appid}/members/${memberid}`, { role: field(await c.req.parseBody(), "role") });
		return back(c, `/dashboard/apps/${appid}/team`, res.ok ? { ok: "Role changed." } : { error: res.error });
	});

	dash.post("/apps/:appid/team/members/:memberid/remove", async (c) => {
		const { appid, memberid } = c.req.param();
		const res = await c.var.api("DELETE", `/apps/${appid}/members/${memberid}`);
		return back(c, `/dashboard/apps/${appid}/team`, res.ok ? { ok: "Member removed." } : { error: res.error });
	});

	dash.post("/apps/:appid/team/tokens", async (c) => {
		const appid = c.req.param("appid");
		const form = await c.req.parseBody();
		const res = await c.var.api("POST", `/apps/${appid}/tokens`, { name: field(form, "name"), role: field(form, "role") });
		if (!res.ok) return back(c, `/dashboard/apps/${appid}/team#tokens`, { error: res.error });
		return shownOnce(c, appid, `Token ${res.body.name} created`, "Token", res.body.token);
	});

	dash.post("/apps/:appid/team/tokens/:tokenid/revoke", async (c) => {
		const { appid, tokenid } = c.req.param();
		const res = await c.var.api("DELETE", `/apps/${appid}/tokens/${tokenid}`);
		return back(c, `/dashboard/apps/${appid}/team#tokens`, res.ok ? { ok: "Token revoked." } : { error: res.error });
	});
}
