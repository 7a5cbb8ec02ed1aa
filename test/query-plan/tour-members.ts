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
	await resetTour(email);
	ok(await admin("DELETE", `/apps/${appid}/members/${member.memberid}`), "remove member");
}

/** Issue 32: a password reset asked, its email read from the local mailbox, the link opened and used. */
async function resetTour(email: string): Promise<void> {
	const form = await page("/dashboard/reset");
	const asked = await page("/dashboard/reset", {
		method: "POST",
		headers: { cookie: cookieOf(form, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(await form.text()), email }),
	});
	if (asked.status !== 200) throw new Error(`ask reset: ${asked.status}`);
	let link: string | undefined;
	for (let i = 0; i < 100 && !link; i++) {
		const { mail } = (await (await page("/dev/mail")).json()) as { mail: { to: string; text: string }[] };
		// Any of the address's mails: the invitation's, sent through the queue, may arrive after the reset's.
		link = mail.filter((m) => m.to === email).flatMap((m) => /https?:\/\/\S+\/dashboard\/reset\/rst_[0-9a-z]+/.exec(m.text) ?? [])[0];
		if (!link) await new Promise((r) => setTimeout(r, 100));
	}
	if (!link) throw new Error("no reset email in /dev/mail");
	const path = new URL(link).pathname;
	const choose = await page(path);
	const password = "another correct horse";
	const used = await page(path, {
		method: "POST",
		headers: { cookie: cookieOf(choose, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(await choose.text()), password, password2: password }),
	});
	if (used.status !== 303) throw new Error(`use reset: ${used.status}`);
}
