import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hashPassword, PBKDF2_ITERATIONS, verifyPassword } from "../../src/admin/passwords";
import { admin, createApp } from "../support/api";
import { csrfOf, fetchPage } from "../support/dashboard";
import { invitationLinkFor } from "../support/mailbox";

/**
 * Members (issue 22): invited by an owner, the invitation accepted once within
 * 7 days, signed in with email and password, held to their apps and role;
 * removing a member or changing a role takes effect on the next request.
 */

const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0] ?? "";
const PASSWORD = "a long enough password";

/** Adds the member; its invitation link is read from the email sent to the address (never from the answer). */
async function invite(appid: string, email: string, role = "reviewer") {
	const res = await admin("POST", `/apps/${appid}/members`, { email, role });
	expect(res.status).toBe(201);
	expect(JSON.stringify(res.body)).not.toContain("inv_");
	const invitationurl = await invitationLinkFor(appid, email.toLowerCase());
	return { ...(res.body as { memberid: string; state: string }), invitationurl };
}

/** Opens the invitation page and posts the form; answers the response and the session cookie it set. */
async function accept(invitationurl: string, fields: Record<string, string>) {
	const path = new URL(invitationurl).pathname;
	const page = await fetchPage(path);
	const html = await page.text();
	const res = await fetchPage(path, {
		method: "POST",
		headers: { cookie: cookieOf(page, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(html), ...fields }),
	});
	return { page, html, res, cookie: cookieOf(res, "dash_session") };
}

async function memberSignIn(email: string, password: string) {
	const login = await fetchPage("/dashboard/login");
	const res = await fetchPage("/dashboard/login/member", {
		method: "POST",
		headers: { cookie: cookieOf(login, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(await login.text()), email, password }),
	});
	return { res, cookie: cookieOf(res, "dash_session") };
}

const email = () => `m-${crypto.randomUUID()}@example.com`;

describe("members", () => {
	it("PBKDF2-SHA256 with a per-person salt and the iterations stored beside the hash", async () => {
		const [a, b] = [await hashPassword(PASSWORD), await hashPassword(PASSWORD)];
		expect(a.iterations).toBe(PBKDF2_ITERATIONS);
		expect(a.salt).not.toBe(b.salt);
		expect(a.hash).not.toBe(b.hash);
		expect(await verifyPassword(PASSWORD, a)).toBe(true);
		expect(await verifyPassword(`${PASSWORD}!`, a)).toBe(false);
	});

	it("invites, refuses a second invitation of the same email and a bad one, lists, changes the role", async () => {
		const app = await createApp();
		const who = email();
		const member = await invite(app.appid, who.toUpperCase());
		expect(member).toMatchObject({ email: who, role: "reviewer", state: "invited" });
		expect(member.invitationurl).toMatch(/^http:\/\/service\.test\/dashboard\/invitations\/inv_[0-9a-z]{43}$/);
		const again = await admin("POST", `/apps/${app.appid}/members`, { email: who, role: "owner" });
		expect(again).toMatchObject({ status: 409, body: { errorcode: "member_exists", fields: ["email"] } });
		const bad = await admin("POST", `/apps/${app.appid}/members`, { email: "not an email", role: "boss" });
		expect(bad.status).toBe(400);
		expect(bad.body.fields).toEqual(["email", "role"]);
		expect((await admin("PATCH", `/apps/${app.appid}/members/${member.memberid}`, { role: "viewer" })).body.role).toBe("viewer");
		expect((await admin("PATCH", `/apps/${app.appid}/members/mem_none`, { role: "viewer" })).status).toBe(404);
		const { members } = (await admin("GET", `/apps/${app.appid}/members`)).body;
		expect(members).toEqual([expect.objectContaining({ memberid: member.memberid, role: "viewer" })]);
	});

	it("an invitation is used once; a short or differing password is refused; an expired one is gone", async () => {
		const app = await createApp();
		const who = email();
		const member = await invite(app.appid, who);
		expect((await accept(member.invitationurl, { password: "short", password2: "short" })).res.status).toBe(400);
		expect((await accept(member.invitationurl, { password: PASSWORD, password2: `${PASSWORD}x` })).res.status).toBe(400);
		const first = await accept(member.invitationurl, { password: PASSWORD, password2: PASSWORD });
		expect(first.res.status).toBe(303);
		expect(first.res.headers.get("location")).toBe(`/dashboard/apps/${app.appid}`);
		expect(first.cookie).not.toBe("");
		expect((await fetchPage(new URL(member.invitationurl).pathname)).status).toBe(404);
		const late = await invite(app.appid, email());
		await env.DB.prepare("UPDATE member_invitations SET expires_at = 0 WHERE memberid = ?").bind(late.memberid).run();
		expect((await fetchPage(new URL(late.invitationurl).pathname)).status).toBe(404);
		const { members } = (await admin("GET", `/apps/${app.appid}/members`)).body;
		expect(members.map((m: { state: string }) => m.state)).toEqual(["accepted", "expired"]);
	});

	it("a person invited to a second app confirms their password; the invitation never replaces it", async () => {
		const [first, second] = [await createApp(), await createApp()];
		const who = email();
		await accept((await invite(first.appid, who)).invitationurl, { password: PASSWORD, password2: PASSWORD });
		const invitation = await invite(second.appid, who, "viewer");
		// Nothing tells the second app's owner that the person exists elsewhere, and nothing is live before acceptance.
		expect(invitation.state).toBe("invited");
		const early = await memberSignIn(who, PASSWORD);
		expect(await (await fetchPage("/dashboard", { headers: { cookie: early.cookie } })).text()).not.toContain(second.appid);
		expect((await fetchPage(`/dashboard/apps/${second.appid}`, { headers: { cookie: early.cookie } })).status).toBe(404);
		const wrong = await accept(invitation.invitationurl, { password: "another password entirely", password2: "another password entirely" });
		expect(wrong.res.status).toBe(401);
		expect((await accept(invitation.invitationurl, { password: PASSWORD })).res.status).toBe(303);
		const { cookie } = await memberSignIn(who, PASSWORD);
		const home = await (await fetchPage("/dashboard", { headers: { cookie } })).text();
		expect(home).toContain(first.appid);
		expect(home).toContain(second.appid);
	});

	it("signs in with email and password, sees only their apps and role's actions; removal ends the session's access at once", async () => {
		const [mine, other] = [await createApp(), await createApp()];
		const who = email();
		const member = await invite(mine.appid, who, "reviewer");
		await accept(member.invitationurl, { password: PASSWORD, password2: PASSWORD });
		expect((await memberSignIn(who, "wrong password here")).res.status).toBe(401);
		expect((await memberSignIn("nobody@example.com", PASSWORD)).res.status).toBe(401);
		const { res, cookie } = await memberSignIn(who.toUpperCase(), PASSWORD);
		expect(res.status).toBe(303);
		const get = (path: string) => fetchPage(path, { headers: { cookie } });
		const home = await (await get("/dashboard")).text();
		expect(home).toContain(mine.appid);
		expect(home).not.toContain(other.appid);
		expect((await get(`/dashboard/apps/${other.appid}`)).status).toBe(404);
		const overview = await (await get(`/dashboard/apps/${mine.appid}`)).text();
		expect(overview).not.toContain("Rotate private key");
		expect(overview).not.toContain("whsec_");
		expect((await get(`/dashboard/apps/${mine.appid}/keys`)).status).toBe(403);
		expect((await get(`/dashboard/apps/${mine.appid}/team`)).status).toBe(403);
		expect(await (await get(`/dashboard/apps/${mine.appid}/review`)).text()).toContain("Approve selected");
		// A role change holds from the next request: a viewer's queue has no actions, and the API refuses the change.
		expect((await admin("PATCH", `/apps/${mine.appid}/members/${member.memberid}`, { role: "viewer" })).status).toBe(200);
		const asViewer = await (await get(`/dashboard/apps/${mine.appid}/review`)).text();
		expect(asViewer).not.toContain("Approve selected");
		expect(asViewer).toContain("reads only");
		expect((await admin("DELETE", `/apps/${mine.appid}/members/${member.memberid}`)).status).toBe(200);
		expect((await get(`/dashboard/apps/${mine.appid}/review`)).status).toBe(404);
		const { entries } = (await admin("GET", `/apps/${mine.appid}/audit?action=member.remove`)).body;
		expect(entries[0]).toMatchObject({ targetid: member.memberid, changes: { email: { before: who, after: null } } });
	});
});
