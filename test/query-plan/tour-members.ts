import { admin } from "../support/api";
import { invitationLinkFor } from "../support/mailbox";
import { cookieOf, csrfOf, ok, page } from "./tour-http";

/**
 * The query-plan tour of issue 22's members: invited, listed, the invitation
 * page read and accepted, a member's sign-in, home and app page, a role change,
 * the audit log under each filter, and the removal.
 */

export async function membersTour(appid: string): Promise<void> {
	const email = `plan-${Date.now()}@example.com`;
	const member = ok(await admin("POST", `/apps/${appid}/members`, { email, role: "reviewer" }), "invite").body;
	ok(await admin("GET", `/apps/${appid}/members`), "list members");
	const path = new URL(await invitationLinkFor(appid, email)).pathname;
	const invitation = await page(path);
	const password = "correct horse battery";
	const accepted = await page(path, {
		method: "POST",
		headers: { cookie: cookieOf(invitation, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(await invitation.text()), password, password2: password }),
	});
	if (accepted.status !== 303) throw new Error(`accept invitation: ${accepted.status}`);
	const login = await page("/dashboard/login");
	const signedIn = await page("/dashboard/login/member", {
		method: "POST",
		headers: { cookie: cookieOf(login, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(await login.text()), email, password }),
	});
	const cookie = cookieOf(signedIn, "dash_session");
	if (!cookie) throw new Error(`member sign-in: ${signedIn.status}`);
	for (const path of ["/dashboard", `/dashboard/apps/${appid}`, `/dashboard/apps/${appid}/audit`]) {
		const res = await page(path, { headers: { cookie } });
		if (res.status !== 200) throw new Error(`${path} as a member: ${res.status}`);
	}
	ok(await admin("PATCH", `/apps/${appid}/members/${member.memberid}`, { role: "viewer" }), "change role");
	for (const query of [
		"",
		"?action=member.role",
		`?actor=${encodeURIComponent("superuser")}`,
		`?targettype=member&targetid=${member.memberid}`,
	]) {
		ok(await admin("GET", `/apps/${appid}/audit${query}`), `audit ${query}`);
	}
	ok(await admin("DELETE", `/apps/${appid}/members/${member.memberid}`), "remove member");
}
