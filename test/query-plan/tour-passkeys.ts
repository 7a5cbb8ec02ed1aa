import { admin } from "../support/api";
import { softAuthenticator } from "../support/authenticator";
import { acceptFromMailbox } from "../support/mailbox";
import { cookieOf, csrfOf, ok, page } from "./tour-http";

/**
 * Issue 32's passkeys: a member registers one on the account page, the app
 * requires passkeys (its setting), a password sign-in is refused, the
 * passkey signs in, and is removed; another member without one is held to
 * the account page and registers theirs there.
 */

const BASE = "http://service.test";
const PASSWORD = "correct horse battery";

const post = (path: string, cookie: string, fields: Record<string, string>) =>
	page(path, { method: "POST", headers: { cookie }, body: new URLSearchParams(fields) });

async function expect(res: Response, status: number, what: string): Promise<Response> {
	if (res.status !== status) throw new Error(`${what}: ${res.status}, expected ${status}: ${(await res.text()).slice(0, 300)}`);
	return res;
}

async function newMember(appid: string) {
	const email = `plan-pk-${crypto.randomUUID()}@example.com`;
	ok(await admin("POST", `/apps/${appid}/members`, { email, role: "viewer" }), "invite");
	const { cookie } = await acceptFromMailbox(appid, email, PASSWORD);
	if (!cookie) throw new Error("accept invitation: no session");
	return { email, cookie };
}

async function register(cookie: string, authenticator: Awaited<ReturnType<typeof softAuthenticator>>) {
	const account = await expect(await page("/dashboard/account", { headers: { cookie } }), 200, "account page");
	const csrf = csrfOf(await account.text());
	const options = await expect(await post("/dashboard/account/passkeys/options", cookie, { _csrf: csrf }), 200, "registration options");
	const response = JSON.stringify(await authenticator.register(await options.json(), BASE));
	const added = await expect(await post("/dashboard/account/passkeys", cookie, { _csrf: csrf, name: "Tour", response }), 303, "register");
	if (!added.headers.get("location")?.includes("ok=")) throw new Error(`register: ${added.headers.get("location")}`);
	return csrf;
}

export async function passkeysTour(appid: string): Promise<void> {
	const first = await newMember(appid);
	const authenticator = await softAuthenticator();
	await register(first.cookie, authenticator);
	ok(await admin("PATCH", `/apps/${appid}`, { requirepasskeys: true }), "require passkeys");

	const login = await page("/dashboard/login");
	const loginCookie = cookieOf(login, "dash_login");
	const loginCsrf = csrfOf(await login.text());
	await expect(
		await post("/dashboard/login/member", loginCookie, { _csrf: loginCsrf, email: first.email, password: PASSWORD }),
		403,
		"password alone",
	);
	const options = await expect(await post("/dashboard/login/passkey/options", loginCookie, { _csrf: loginCsrf }), 200, "sign-in options");
	const response = JSON.stringify(await authenticator.authenticate(await options.json(), BASE));
	const signedIn = await expect(
		await post("/dashboard/login/passkey", loginCookie, { _csrf: loginCsrf, response }),
		303,
		"passkey sign-in",
	);
	const session = cookieOf(signedIn, "dash_session");
	await expect(await page(`/dashboard/apps/${appid}`, { headers: { cookie: session } }), 200, "app page with a passkey");

	// A member without a passkey: held to the account page, registers there.
	const second = await newMember(appid);
	await expect(await page(`/dashboard/apps/${appid}`, { headers: { cookie: second.cookie } }), 303, "app page before a passkey");
	await register(second.cookie, await softAuthenticator());
	await expect(await page(`/dashboard/apps/${appid}`, { headers: { cookie: second.cookie } }), 200, "app page after registering");

	const account = await page("/dashboard/account", { headers: { cookie: session } });
	const removed = await post("/dashboard/account/passkeys/remove", session, {
		_csrf: csrfOf(await account.text()),
		credentialid: authenticator.credentialId,
	});
	if (!removed.headers.get("location")?.includes("ok=")) throw new Error(`remove passkey: ${removed.headers.get("location")}`);
	ok(await admin("GET", `/apps/${appid}/audit?action=passkey.add`), "audit passkey.add");
	ok(await admin("PATCH", `/apps/${appid}`, { requirepasskeys: false }), "passkeys optional again");
}
