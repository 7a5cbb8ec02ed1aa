/** @jsxImportSource hono/jsx */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import { clientIpHash } from "../admin/principal";
import { markSessionPasskey } from "../db/admin-sessions";
import { newAuditEntryId } from "../db/audit";
import { findPersonById } from "../db/members";
import { deletePasskey, findPasskey, insertPasskey, listPasskeys, passkeyPolicy, useChallenge, usePasskey } from "../db/passkeys";
import { sha256Hex } from "../domain/crypto";
import { nowIso } from "../domain/dates";
import { countAdminFailure, refuseThrottledAdmin } from "../http/admin-throttle";
import { ApiError } from "../http/errors";
import { clientIp, RETRY_AFTER_SECONDS } from "../http/rate-limits";
import { back, type Dash, type DashContext, field, flash } from "./context";
import { Csrf, dateTime, Field, Page, Table } from "./layout";
import { checkLoginCsrf, loginCsrf, loginNonce, startSession } from "./session";
import { checkedChallenge, parseResponse, registrationOptions, signInOptions, verifiedRegistration, verifiedSignIn } from "./webauthn";

/**
 * Passkeys (docs/operators.md "Passkeys"): a member registers them on their
 * account page and signs in with one on the sign-in page. The ceremonies need
 * script (WebAuthn is a browser API): passkeys.js asks for options as JSON,
 * runs the browser's ceremony through @simplewebauthn/browser, and posts the
 * answer in an ordinary form, whose result is an ordinary page. Removing a
 * passkey is a plain form.
 */

/** The browser side: the library's UMD bundle (a static asset, scripts/static-assets.mjs) and the dashboard's glue. */
export const PASSKEY_SCRIPTS = ["/dashboard/static/webauthn.js", "/dashboard/static/passkeys.js"];

/** The sign-in page's passkey form: hidden until passkeys.js finds WebAuthn in the browser. */
export function PasskeySignIn({ csrf }: { csrf: string }) {
	return (
		<form
			class="grid login"
			method="post"
			action="/dashboard/login/passkey"
			data-passkey="signin"
			data-options="/dashboard/login/passkey/options"
			aria-labelledby="passkey-sign-in"
			hidden
		>
			<h2 id="passkey-sign-in">Passkey</h2>
			<Csrf token={csrf} />
			<input type="hidden" name="response" />
			<p class="flash error" role="alert" data-passkey-error hidden></p>
			<div>
				<button type="submit">Sign in with a passkey</button>
			</div>
		</form>
	);
}

const SIGN_IN_FAILED = "That passkey did not sign you in: it is not registered here, or the attempt expired. Try again.";

export function registerPasskeySignIn(dash: Dash, loginPage: (csrf: string, error?: string) => unknown) {
	dash.post("/login/passkey/options", async (c) => {
		const form = await c.req.parseBody();
		const nonce = loginNonce(c);
		if (!nonce || !(await checkLoginCsrf(c, field(form, "_csrf")))) return c.json({ error: "The form expired; reload the page." }, 403);
		return c.json(await signInOptions(c.env.ADMIN_TOKEN, c.req.url, nonce, Date.now()));
	});

	dash.post("/login/passkey", async (c) => {
		const form = await c.req.parseBody();
		const render = async (error: string, status: 401 | 403 | 429) => c.html(loginPage(await loginCsrf(c), error) as string, status);
		const nonce = loginNonce(c);
		if (!nonce || !(await checkLoginCsrf(c, field(form, "_csrf")))) return render("The form expired; try again.", 403);
		const ip = clientIp(c.req.raw);
		const response = parseResponse<AuthenticationResponseJSON>(field(form, "response"));
		try {
			// The same limit as the other sign-ins (http/admin-throttle.ts): an address over it is refused before any check.
			refuseThrottledAdmin(ip);
			const now = Date.now();
			const challenge = response && (await checkedChallenge(c.env.ADMIN_TOKEN, "signin", nonce, response.response.clientDataJSON, now));
			const passkey = response && challenge ? await findPasskey(c.env.DB, response.id) : null;
			const verified = response && challenge && passkey ? await verifiedSignIn(response, challenge.challenge, c.req.url, passkey) : null;
			const used =
				challenge &&
				passkey &&
				verified &&
				(await usePasskey(c.env.DB, {
					credentialId: passkey.credentialId,
					expectedCounter: passkey.counter,
					newCounter: verified.newCounter,
					challenge: challenge.challenge,
					expiresAt: challenge.expiresAt,
					at: nowIso(),
				}));
			if (!passkey || !used) {
				await countAdminFailure(c.env, { ip, credential: response?.id ?? field(form, "response").slice(0, 200) });
				return render(SIGN_IN_FAILED, 401);
			}
			await startSession(c, passkey.personid, "passkey");
			return c.redirect("/dashboard", 303);
		} catch (err) {
			if (err instanceof ApiError && err.status === 429) {
				c.header("Retry-After", String(RETRY_AFTER_SECONDS));
				return render("Too many failed sign-ins from this address. Wait 10 seconds.", 429);
			}
			throw err;
		}
	});
}

function AccountPage(props: {
	csrf: string;
	email: string;
	passkeys: Awaited<ReturnType<typeof listPasskeys>>;
	needed: boolean;
	ok: string | null;
	error: string | null;
}) {
	return (
		<Page title="Your account" csrf={props.csrf} ok={props.ok} error={props.error} scripts={PASSKEY_SCRIPTS}>
			<p>
				Signed in as <strong>{props.email}</strong>.
			</p>
			{props.needed && (
				<p class="flash error" role="alert" data-testid="passkey-needed">
					An app you are a member of requires a passkey. Register one to continue.
				</p>
			)}
			<h2 id="passkeys">Passkeys</h2>
			<Table caption="Your passkeys" head={["Name", "Added", "Last used", ""]} empty={props.passkeys.length === 0}>
				{props.passkeys.map((k) => (
					<tr data-passkey={k.credentialId}>
						<td>{k.name}</td>
						<td>{dateTime(k.createdAt)}</td>
						<td>{k.lastUsedAt ? dateTime(k.lastUsedAt) : "never"}</td>
						<td>
							<form method="post" action="/dashboard/account/passkeys/remove">
								<Csrf token={props.csrf} />
								<input type="hidden" name="credentialid" value={k.credentialId} />
								<button type="submit" class="secondary" aria-label={`Remove the passkey ${k.name}`}>
									Remove
								</button>
							</form>
						</td>
					</tr>
				))}
			</Table>
			<h2 id="add-passkey">Add a passkey</h2>
			<noscript>
				<p>Adding a passkey needs JavaScript: the browser's passkey prompt is a script API.</p>
			</noscript>
			<form
				class="grid"
				method="post"
				action="/dashboard/account/passkeys"
				data-passkey="register"
				data-options="/dashboard/account/passkeys/options"
				aria-labelledby="add-passkey"
				hidden
			>
				<Csrf token={props.csrf} />
				<input type="hidden" name="response" />
				<Field
					label="Name"
					name="name"
					value="Passkey"
					required
					hint="to tell your passkeys apart, e.g. Work laptop"
					attrs={{ maxlength: 60 }}
				/>
				<p class="flash error" role="alert" data-passkey-error hidden></p>
				<div>
					<button type="submit">Add a passkey</button>
				</div>
			</form>
		</Page>
	);
}

/** The signed-in member's person; the superuser (the admin token) has no account or passkeys. */
async function memberOf(c: DashContext) {
	const { personid } = c.var.session;
	const person = personid ? await findPersonById(c.env.DB, personid) : null;
	if (!person) throw new ApiError(404, "not_found", "The admin token has no account: passkeys are for members.");
	return person;
}

const passkeyAudit = async (c: DashContext) => ({
	entryid: newAuditEntryId(),
	at: nowIso(),
	iphash: await clientIpHash(c.env, clientIp(c.req.raw)),
});

/**
 * A password session of a member whose app requires passkeys may register
 * the person's first passkey only: with one already, they sign in with it
 * (whoever knows the password must not add their own).
 */
async function mayRegister(c: DashContext, personid: string): Promise<boolean> {
	return !c.var.session.passkeyNeeded || (await passkeyPolicy(c.env.DB, personid)).passkeys === 0;
}

/**
 * Whether a password may start a session of this person: not when an app of
 * theirs requires passkeys and they have one (they sign in with it). Without
 * one yet, the session is limited to registering it (PASSKEY_ENROLMENT_PATHS).
 */
export async function passwordSessionAllowed(db: D1Database, personid: string): Promise<boolean> {
	const policy = await passkeyPolicy(db, personid);
	return !(policy.required && policy.passkeys > 0);
}

export const PASSKEY_REQUIRED = "An app you are a member of requires a passkey: sign in with your passkey.";

const REGISTER_REFUSED = "You have a passkey already: sign out and sign in with it to add another.";

export function registerAccount(dash: Dash) {
	dash.get("/account", async (c) => {
		if (!c.var.session.personid) {
			return c.html(
				<Page title="Your account" csrf={c.var.session.csrf}>
					<p>You signed in with the service's admin token (set-up): it has no account and no passkeys. Members have theirs here.</p>
				</Page>,
			);
		}
		const person = await memberOf(c);
		const passkeys = await listPasskeys(c.env.DB, person.personid);
		return c.html(
			<AccountPage csrf={c.var.session.csrf} email={person.email} passkeys={passkeys} needed={c.var.session.passkeyNeeded} {...flash(c)} />,
		);
	});

	dash.post("/account/passkeys/options", async (c) => {
		const person = await memberOf(c);
		if (!(await mayRegister(c, person.personid))) return c.json({ error: REGISTER_REFUSED }, 403);
		const existing = await listPasskeys(c.env.DB, person.personid);
		return c.json(await registrationOptions(c.env.ADMIN_TOKEN, c.req.url, c.var.session.id, person, existing, Date.now()));
	});

	dash.post("/account/passkeys", async (c) => {
		const person = await memberOf(c);
		const form = await c.req.parseBody();
		const name = field(form, "name").trim().slice(0, 60) || "Passkey";
		if (!(await mayRegister(c, person.personid))) return back(c, "/dashboard/account", { error: REGISTER_REFUSED });
		const response = parseResponse<RegistrationResponseJSON>(field(form, "response"));
		const binding = `${c.var.session.id}:${person.personid}`;
		const challenge =
			response && (await checkedChallenge(c.env.ADMIN_TOKEN, "register", binding, response.response.clientDataJSON, Date.now()));
		const credential = response && challenge ? await verifiedRegistration(response, challenge.challenge, c.req.url) : null;
		if (!challenge || !credential || !(await useChallenge(c.env.DB, challenge.challenge, challenge.expiresAt))) {
			return back(c, "/dashboard/account", {
				error: "The passkey was not added: the browser's answer did not verify or expired. Try again.",
			});
		}
		const stored = { ...credential, personid: person.personid, name, createdAt: nowIso() };
		if (!(await insertPasskey(c.env.DB, stored, await passkeyAudit(c)))) {
			return back(c, "/dashboard/account", { error: "This passkey is registered already." });
		}
		// The first passkey of a member whose app requires them: this session has proven it, and goes on.
		if (c.var.session.passkeyNeeded) await markSessionPasskey(c.env.DB, await sha256Hex(c.var.session.id));
		return back(c, "/dashboard/account", { ok: `Passkey "${name}" added.` });
	});

	dash.post("/account/passkeys/remove", async (c) => {
		const person = await memberOf(c);
		const credentialId = field(await c.req.parseBody(), "credentialid");
		const passkey = (await listPasskeys(c.env.DB, person.personid)).find((k) => k.credentialId === credentialId);
		const removed = passkey && (await deletePasskey(c.env.DB, person.personid, credentialId, passkey.name, await passkeyAudit(c)));
		return back(c, "/dashboard/account", removed ? { ok: `Passkey "${passkey.name}" removed.` } : { error: "No such passkey of yours." });
	});
}

/** What a session that still needs its first passkey may reach: the account page, its registration, signing out. */
export const PASSKEY_ENROLMENT_PATHS = [
	"/dashboard/account",
	"/dashboard/account/passkeys/options",
	"/dashboard/account/passkeys",
	"/dashboard/logout",
];
