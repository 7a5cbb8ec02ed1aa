import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CHALLENGE_TTL_MS, checkedChallenge } from "../../src/dashboard/webauthn";
import { ADMIN_TOKEN, admin, createApp } from "../support/api";
import { type SoftAuthenticator, softAuthenticator } from "../support/authenticator";
import { BASE, csrfOf, fetchPage } from "../support/dashboard";
import { acceptFromMailbox } from "../support/mailbox";

/**
 * Issue 32: passkeys for the dashboard, with a software authenticator
 * speaking WebAuthn's bytes (test/support/authenticator.ts): registered from
 * the account page, signing in, each challenge once and for 5 minutes, the
 * counter kept, audit entries; an app that requires passkeys refuses a
 * password alone and makes a member without one register it first.
 */

const PASSWORD = "a long enough password";
const email = () => `pk-${crypto.randomUUID()}@example.com`;
const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0] ?? "";

const post = (path: string, cookie: string, fields: Record<string, string>) =>
	fetchPage(path, { method: "POST", headers: { cookie }, body: new URLSearchParams(fields) });

/** A member of a new app (owner), signed in by accepting their invitation with a password. */
async function member() {
	const app = await createApp();
	const who = email();
	expect((await admin("POST", `/apps/${app.appid}/members`, { email: who, role: "owner" })).status).toBe(201);
	const { res, cookie } = await acceptFromMailbox(app.appid, who, PASSWORD);
	expect(res.status).toBe(303);
	return { app, email: who, cookie };
}

async function accountPage(cookie: string) {
	const res = await fetchPage("/dashboard/account", { headers: { cookie } });
	const html = await res.text();
	return { status: res.status, html, csrf: csrfOf(html) };
}

async function registerPasskey(cookie: string, authenticator: SoftAuthenticator, name = "Laptop") {
	const { csrf } = await accountPage(cookie);
	const options = await post("/dashboard/account/passkeys/options", cookie, { _csrf: csrf });
	expect(options.status).toBe(200);
	const response = await authenticator.register(await options.json(), BASE);
	return post("/dashboard/account/passkeys", cookie, { _csrf: csrf, name, response: JSON.stringify(response) });
}

/** The sign-in page's cookie and CSRF token, and a ceremony's options for it. */
async function signInCeremony(authenticator: SoftAuthenticator) {
	const login = await fetchPage("/dashboard/login");
	const cookie = cookieOf(login, "dash_login");
	const csrf = csrfOf(await login.text());
	const options = await post("/dashboard/login/passkey/options", cookie, { _csrf: csrf });
	expect(options.status).toBe(200);
	const response = JSON.stringify(await authenticator.authenticate(await options.json(), BASE));
	return { cookie, csrf, response, send: () => post("/dashboard/login/passkey", cookie, { _csrf: csrf, response }) };
}

async function passwordSignIn(who: string) {
	const login = await fetchPage("/dashboard/login");
	return post("/dashboard/login/member", cookieOf(login, "dash_login"), {
		_csrf: csrfOf(await login.text()),
		email: who,
		password: PASSWORD,
	});
}

const auditActions = async (appid: string, action: string) =>
	(await admin("GET", `/apps/${appid}/audit?action=${action}`)).body.entries as { actor: string; targettype: string; changes: unknown }[];

describe("passkeys", { timeout: 60_000 }, () => {
	it("a member registers a passkey and signs in with it; each challenge works once; adding and removing are audited", async () => {
		const { app, email: who, cookie } = await member();
		const authenticator = await softAuthenticator();
		const added = await registerPasskey(cookie, authenticator);
		expect(added.status).toBe(303);
		expect(added.headers.get("location")).toContain("ok=");
		const account = await accountPage(cookie);
		expect(account.html).toContain(`data-passkey="${authenticator.credentialId}"`);
		expect(account.html).toContain("Laptop");
		expect(await auditActions(app.appid, "passkey.add")).toEqual([
			expect.objectContaining({ actor: who, targettype: "passkey", changes: { name: { before: null, after: "Laptop" } } }),
		]);

		const ceremony = await signInCeremony(authenticator);
		const signedIn = await ceremony.send();
		expect(signedIn.status).toBe(303);
		const session = cookieOf(signedIn, "dash_session");
		expect(session).not.toBe("");
		expect(await (await fetchPage("/dashboard", { headers: { cookie: session } })).text()).toContain(app.appid);
		const stored = await env.DB.prepare("SELECT counter, last_used_at FROM passkeys WHERE credential_id = ?")
			.bind(authenticator.credentialId)
			.first<{ counter: number; last_used_at: string | null }>();
		expect(stored).toMatchObject({ counter: 1, last_used_at: expect.any(String) });

		// The same answer again: its challenge was used.
		const replay = await ceremony.send();
		expect(replay.status).toBe(401);
		expect(cookieOf(replay, "dash_session")).toBe("");
		// An answer to options given to another sign-in form (another browser's cookie) is refused.
		const other = await signInCeremony(authenticator);
		const elsewhere = await post("/dashboard/login/passkey", ceremony.cookie, { _csrf: ceremony.csrf, response: other.response });
		expect(elsewhere.status).toBe(401);
		// A challenge expires after 5 minutes.
		const clientData = (JSON.parse(other.response) as { response: { clientDataJSON: string } }).response.clientDataJSON;
		const nonce = decodeURIComponent(other.cookie.split("=")[1] ?? "");
		expect(await checkedChallenge(ADMIN_TOKEN, "signin", nonce, clientData, Date.now())).not.toBeNull();
		expect(await checkedChallenge(ADMIN_TOKEN, "signin", nonce, clientData, Date.now() + CHALLENGE_TTL_MS + 1)).toBeNull();

		const removed = await post("/dashboard/account/passkeys/remove", session, {
			_csrf: (await accountPage(session)).csrf,
			credentialid: authenticator.credentialId,
		});
		expect(removed.headers.get("location")).toContain("ok=");
		expect((await accountPage(session)).html).not.toContain(`data-passkey="${authenticator.credentialId}"`);
		expect(await auditActions(app.appid, "passkey.remove")).toHaveLength(1);
		// Removed: it signs nobody in.
		expect((await (await signInCeremony(authenticator)).send()).status).toBe(401);
	});

	it("an app requiring passkeys refuses a password alone; a member without one registers it before any other page", async () => {
		const { app, email: who } = await member();
		const setting = await admin("PATCH", `/apps/${app.appid}`, { requirepasskeys: true });
		expect(setting.status).toBe(200);
		expect(setting.body.requirepasskeys).toBe(true);
		expect(await auditActions(app.appid, "app.update")).toEqual(
			expect.arrayContaining([expect.objectContaining({ changes: { requirepasskeys: { before: false, after: true } } })]),
		);

		// No passkey yet: the password opens the account page only.
		const first = await passwordSignIn(who);
		expect(first.status).toBe(303);
		const limited = cookieOf(first, "dash_session");
		const appPage = await fetchPage(`/dashboard/apps/${app.appid}`, { headers: { cookie: limited } });
		expect(appPage.status).toBe(303);
		expect(appPage.headers.get("location")).toBe("/dashboard/account");
		const account = await accountPage(limited);
		expect(account.status).toBe(200);
		expect(account.html).toContain('data-testid="passkey-needed"');
		const refusedPost = await post(`/dashboard/apps/${app.appid}/rotate-webhooksecret`, limited, { _csrf: account.csrf });
		expect(refusedPost.status).toBe(403);

		const authenticator = await softAuthenticator();
		expect((await registerPasskey(limited, authenticator)).status).toBe(303);
		// Registering it proved the passkey: this session goes on.
		expect((await fetchPage(`/dashboard/apps/${app.appid}`, { headers: { cookie: limited } })).status).toBe(200);

		// With a passkey, the password alone is refused, and no session starts.
		const refused = await passwordSignIn(who);
		expect(refused.status).toBe(403);
		expect(await refused.text()).toContain("requires a passkey");
		expect(cookieOf(refused, "dash_session")).toBe("");
		const withPasskey = await (await signInCeremony(authenticator)).send();
		expect(withPasskey.status).toBe(303);
		expect((await fetchPage(`/dashboard/apps/${app.appid}`, { headers: { cookie: cookieOf(withPasskey, "dash_session") } })).status).toBe(
			200,
		);
	});

	it("a password session from before the requirement may not add a passkey of a person who has one", async () => {
		const { app, email: who, cookie } = await member();
		expect((await registerPasskey(cookie, await softAuthenticator())).status).toBe(303);
		const session = cookieOf(await passwordSignIn(who), "dash_session");
		expect(session).not.toBe("");
		await admin("PATCH", `/apps/${app.appid}`, { requirepasskeys: true });
		const { csrf, html } = await accountPage(session);
		expect(html).toContain('data-testid="passkey-needed"');
		const options = await post("/dashboard/account/passkeys/options", session, { _csrf: csrf });
		expect(options.status).toBe(403);
		expect((await fetchPage(`/dashboard/apps/${app.appid}`, { headers: { cookie: session } })).status).toBe(303);
	});
});
