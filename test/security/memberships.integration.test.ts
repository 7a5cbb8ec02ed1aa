import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, createApp, request } from "../support/api";
import { csrfOf, fetchPage } from "../support/dashboard";
import { acceptFromMailbox, invitationLinkFor } from "../support/mailbox";

/**
 * Issue 32: people who can't be impersonated. An invitation's link goes to
 * the email only; a membership starts when its own invitation is accepted;
 * proving a password on an invitation is held to the sign-in limits; one
 * app's owner can do nothing to a person's other apps; a stale credential
 * retried never locks out the valid one; reserved token names are refused;
 * privacy records name the authenticated actor.
 */

const PASSWORD = "a long enough password";
const email = () => `p-${crypto.randomUUID()}@example.com`;
const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0] ?? "";

async function memberSignIn(who: string, password: string) {
	const login = await fetchPage("/dashboard/login");
	const res = await fetchPage("/dashboard/login/member", {
		method: "POST",
		headers: { cookie: cookieOf(login, "dash_login") },
		body: new URLSearchParams({ _csrf: csrfOf(await login.text()), email: who, password }),
	});
	return cookieOf(res, "dash_session");
}

/** A person who accepted an invitation to `appid` from their mailbox, signed in: their session cookie. */
async function acceptedMember(appid: string, who: string, role = "owner") {
	expect((await admin("POST", `/apps/${appid}/members`, { email: who, role })).status).toBe(201);
	const accepted = await acceptFromMailbox(appid, who, PASSWORD);
	expect(accepted.res.status).toBe(303);
	return accepted.cookie;
}

/** Runs `attempt` again (with a new round number, so a new address) when it straddled a 10 s rate-limit window. */
async function inOneWindow<T>(attempt: (round: number) => Promise<T>): Promise<T> {
	for (let round = 0; ; round++) {
		const window = Math.floor(Date.now() / 10_000);
		const result = await attempt(round);
		if (Math.floor(Date.now() / 10_000) === window || round >= 2) return result;
	}
}

describe("invitations go to the email, memberships start on acceptance", () => {
	it("the cross-tenant takeover fails: A's owner gets no link, no session in B; B's member accepts from the mailbox", async () => {
		const [a, b] = [await createApp(), await createApp()];
		const attacker = email();
		const victim = email();
		// A's owner invites the victim's email to A: the answer, the member list and the delivery log carry no link.
		const ownerA = await acceptedMember(a.appid, attacker);
		const asOwnerA = (path: string, init: RequestInit = {}) => fetchPage(path, { ...init, headers: { cookie: ownerA, ...init.headers } });
		const team = await asOwnerA(`/dashboard/apps/${a.appid}/team`);
		const csrf = csrfOf(await team.text());
		const invited = await asOwnerA(`/dashboard/apps/${a.appid}/team/members`, {
			method: "POST",
			body: new URLSearchParams({ _csrf: csrf, email: victim, role: "viewer" }),
		});
		expect(invited.status).toBe(303);
		const shown = await (await asOwnerA(invited.headers.get("location") ?? "")).text();
		expect(shown).toContain(`Invitation emailed to ${victim}`);
		expect(shown).not.toContain("inv_");
		const listed = await admin("GET", `/apps/${a.appid}/members`);
		expect(JSON.stringify(listed.body)).not.toContain("inv_");
		const deliveries = await admin("GET", `/apps/${a.appid}/deliveries`);
		const invitation = deliveries.body.deliveries.find((d: { type: string }) => d.type === "email.invitation");
		const detail = await admin("GET", `/apps/${a.appid}/deliveries/${invitation.eventid}`);
		expect(detail.body.payload).toMatchObject({ to: expect.any(String), text: "(secret)", html: "(secret)" });
		expect(JSON.stringify(detail.body)).not.toContain("inv_");
		// B adds the victim as an owner: nothing is live until the victim accepts B's own invitation.
		expect((await admin("POST", `/apps/${b.appid}/members`, { email: victim, role: "owner" })).body.state).toBe("invited");
		expect((await asOwnerA(`/dashboard/apps/${b.appid}`)).status).toBe(404);
		// The victim accepts A's invitation (their own choice of password), then B's with the same password.
		expect((await acceptFromMailbox(a.appid, victim, PASSWORD)).res.status).toBe(303);
		const intoB = await acceptFromMailbox(b.appid, victim, PASSWORD);
		expect(intoB.res.status).toBe(303);
		expect(intoB.res.headers.get("location")).toBe(`/dashboard/apps/${b.appid}`);
		expect((await fetchPage(`/dashboard/apps/${b.appid}`, { headers: { cookie: intoB.cookie } })).status).toBe(200);
		expect((await asOwnerA(`/dashboard/apps/${b.appid}`)).status).toBe(404);
	});

	it("a membership inserted for a person with a password gives nothing until its own invitation is accepted", async () => {
		const [c, d] = [await createApp(), await createApp()];
		const who = email();
		await acceptedMember(c.appid, who, "viewer");
		expect((await admin("POST", `/apps/${d.appid}/members`, { email: who, role: "owner" })).status).toBe(201);
		const cookie = await memberSignIn(who, PASSWORD);
		const get = (path: string) => fetchPage(path, { headers: { cookie } });
		expect(await (await get("/dashboard")).text()).not.toContain(d.appid);
		expect((await get(`/dashboard/apps/${d.appid}`)).status).toBe(404);
		expect((await get(`/dashboard/apps/${d.appid}/keys`)).status).toBe(404);
	});

	it("adding an existing and a new email give identical answers", async () => {
		const [c, d] = [await createApp(), await createApp()];
		const existing = email();
		await acceptedMember(c.appid, existing, "viewer");
		const fresh = email();
		const answers = [];
		for (const who of [existing, fresh]) {
			const res = await admin("POST", `/apps/${d.appid}/members`, { email: who, role: "manager" });
			const { memberid, email: shownEmail, createdat, ...rest } = res.body;
			expect(shownEmail).toBe(who);
			expect(memberid).toMatch(/^mem_/);
			expect(createdat).toEqual(expect.any(String));
			answers.push({ status: res.status, keys: Object.keys(res.body).sort(), rest });
		}
		expect(answers[0]).toEqual(answers[1]);
		expect(answers[0]?.rest).toEqual({ role: "manager", state: "invited", acceptedat: null, passkeys: 0 });
		const { members } = (await admin("GET", `/apps/${d.appid}/members`)).body;
		expect(members.map((m: { state: string }) => m.state)).toEqual(["invited", "invited"]);
	});

	it("removing a member from app D leaves their session in app C working", async () => {
		const [c, d] = [await createApp(), await createApp()];
		const who = email();
		await acceptedMember(c.appid, who, "viewer");
		expect((await admin("POST", `/apps/${d.appid}/members`, { email: who, role: "viewer" })).status).toBe(201);
		const { cookie } = await acceptFromMailbox(d.appid, who, PASSWORD);
		const get = (path: string) => fetchPage(path, { headers: { cookie } });
		expect((await get(`/dashboard/apps/${d.appid}`)).status).toBe(200);
		const { members } = (await admin("GET", `/apps/${d.appid}/members`)).body;
		expect((await admin("DELETE", `/apps/${d.appid}/members/${members[0].memberid}`)).status).toBe(200);
		expect((await get(`/dashboard/apps/${d.appid}`)).status).toBe(404);
		expect((await get(`/dashboard/apps/${c.appid}`)).status).toBe(200);
		expect(await (await get("/dashboard")).text()).toContain(c.appid);
	});
});

describe("credentials are throttled by what is guessed", () => {
	it("30 wrong passwords on the invitation form: 10 failures then 429, never a 500; the right one is refused while over", async () => {
		const [c, d] = [await createApp(), await createApp()];
		const { statuses, right } = await inOneWindow(async (round) => {
			// A person of their own per round: a round that straddled a window leaves its target counted.
			const who = email();
			await acceptedMember(c.appid, who, "viewer");
			expect((await admin("POST", `/apps/${d.appid}/members`, { email: who, role: "viewer" })).status).toBe(201);
			const path = new URL(await invitationLinkFor(d.appid, who)).pathname;
			const ip = `198.51.100.${60 + round}`;
			const seen: number[] = [];
			for (let i = 0; i < 30; i++) {
				const page = await fetchPage(path);
				const res = await fetchPage(path, {
					method: "POST",
					headers: { cookie: cookieOf(page, "dash_login"), "cf-connecting-ip": ip },
					body: new URLSearchParams({ _csrf: csrfOf(await page.text()), password: `guess number ${round}-${i}` }),
				});
				seen.push(res.status);
				if (res.status === 429) expect(res.headers.get("retry-after")).toBe("10");
			}
			const page = await fetchPage(path);
			const right = await fetchPage(path, {
				method: "POST",
				headers: { cookie: cookieOf(page, "dash_login"), "cf-connecting-ip": ip },
				body: new URLSearchParams({ _csrf: csrfOf(await page.text()), password: PASSWORD }),
			});
			return { statuses: seen, right: right.status };
		});
		expect(statuses).toEqual([...Array(10).fill(401), ...Array(20).fill(429)]);
		// Over the limit, refused before the compare: a right guess does not show.
		expect(right).toBe(429);
		const pending = await env.DB.prepare("SELECT COUNT(*) AS n FROM members WHERE appid = ? AND accepted_at IS NOT NULL")
			.bind(d.appid)
			.first();
		expect(pending).toEqual({ n: 0 });
	});

	it("guesses at one person from many addresses are refused after 10 (counted per target person)", async () => {
		const c = await createApp();
		const statuses = await inOneWindow(async (round) => {
			const who = email();
			await acceptedMember(c.appid, who, "viewer");
			const seen: number[] = [];
			for (let i = 0; i < 12; i++) {
				const login = await fetchPage("/dashboard/login");
				const res = await fetchPage("/dashboard/login/member", {
					method: "POST",
					headers: { cookie: cookieOf(login, "dash_login"), "cf-connecting-ip": `203.0.113.${100 + round * 20 + i}` },
					body: new URLSearchParams({ _csrf: csrfOf(await login.text()), email: who, password: `guess ${round}-${i}` }),
				});
				seen.push(res.status);
			}
			return seen;
		});
		expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
	});

	it("a stale token retried 50 times does not stop a valid token from the same address; distinct guesses still do", async () => {
		const app = await createApp();
		const stale = (await admin("POST", `/apps/${app.appid}/tokens`, { name: "nightly script", role: "viewer" })).body;
		const valid = (await admin("POST", `/apps/${app.appid}/tokens`, { name: "operator", role: "viewer" })).body.token;
		expect((await admin("DELETE", `/apps/${app.appid}/tokens/${stale.tokenid}`)).status).toBe(200);
		const call = (token: string, ip: string) =>
			request(`/admin/v1/apps/${app.appid}`, { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": ip } });
		const { retried, validAfter, guesses } = await inOneWindow(async (round) => {
			const ip = `198.51.100.${80 + round}`;
			const retried: number[] = [];
			for (let i = 0; i < 50; i++) retried.push((await call(stale.token, ip)).status);
			const validAfter = (await call(valid, ip)).status;
			const guesses: number[] = [];
			for (let i = 0; i < 11; i++) guesses.push((await call(`adm_guess${round}x${i}`, ip)).status);
			return { retried, validAfter, guesses };
		});
		expect(retried).toEqual(Array(50).fill(401));
		expect(validAfter).toBe(200);
		// The stale token counted once: 9 more distinct failures reach the limit, the 10th is over it.
		expect(guesses).toEqual([...Array(9).fill(401), 429, 429]);
	});
});

describe("names and actors no client can claim", () => {
	it("refuses reserved token names in any case (400)", async () => {
		const app = await createApp();
		for (const name of ["superuser", "Owner", "MANAGER", " reviewer ", "viewer"]) {
			const res = await admin("POST", `/apps/${app.appid}/tokens`, { name, role: "viewer" });
			expect(res.status, name).toBe(400);
			expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: ["name"] });
		}
		expect((await admin("POST", `/apps/${app.appid}/tokens`, { name: "owner's script", role: "viewer" })).status).toBe(201);
	});

	it("erasure and export records name the authenticated token, whatever x-admin-actor says", async () => {
		const app = await createApp();
		const user = (await app.api("register", { email: email() })).body;
		const owner = (await admin("POST", `/apps/${app.appid}/tokens`, { name: "privacy desk", role: "owner" })).body.token;
		const headers = { authorization: `Bearer ${owner}`, "x-admin-actor": "someone else" };
		expect((await request(`/admin/v1/apps/${app.appid}/users/${user.userkey}/export`, { headers })).status).toBe(200);
		expect((await request(`/admin/v1/apps/${app.appid}/users/${user.userkey}`, { method: "DELETE", headers })).status).toBe(200);
		const log = await env.DB.prepare("SELECT action, actor FROM privacy_log WHERE userkey = ? ORDER BY logid").bind(user.userkey).all();
		expect(log.results).toEqual([
			{ action: "export", actor: "privacy desk" },
			{ action: "erase", actor: "privacy desk" },
		]);
	});
});
