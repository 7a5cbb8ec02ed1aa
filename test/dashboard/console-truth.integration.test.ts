import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";
import { conversion, csrfOf, fetchPage, flushLedger, registerUser, signIn, type TestApp } from "../support/dashboard";
import { acceptFromMailbox } from "../support/mailbox";

/**
 * Issue 32, the console's truth: each item a new operator ran into, as the
 * dashboard shows it (each of these failed on the main of the issue).
 */

const PASSWORD = "a long enough password";

/** A member of `app` with `role`, signed in from their own invitation: GET and form POST as them. */
async function memberOf(app: TestApp, role: string) {
	const email = `${role}-${crypto.randomUUID()}@example.com`;
	expect((await admin("POST", `/apps/${app.appid}/members`, { email, role })).status).toBe(201);
	const { cookie } = await acceptFromMailbox(app.appid, email, PASSWORD);
	const get = (path: string) => fetchPage(path, { headers: { cookie } });
	const csrf = csrfOf(await (await get("/dashboard")).text());
	const post = (path: string, fields: Record<string, string>) =>
		fetchPage(path, { method: "POST", headers: { cookie }, body: new URLSearchParams({ _csrf: csrf, ...fields }) });
	return { email, get, post };
}

describe("the console tells the truth", { timeout: 60_000 }, () => {
	it("a manager makes a campaign the default, as docs/operators.md says managers may", async () => {
		const app = await createApp();
		const second = await admin("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: "Second",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 1, rewardunit: "USD" }],
		});
		const manager = await memberOf(app, "manager");
		const page = await (await manager.get(`/dashboard/apps/${app.appid}/campaigns/${second.body.campaignid}`)).text();
		expect(page).toContain("Make this the default campaign");
		const res = await manager.post(`/dashboard/apps/${app.appid}/campaigns/${second.body.campaignid}/default`, {});
		expect(res.status).toBe(303);
		expect(new URL(res.headers.get("location") ?? "", "http://x").searchParams.get("ok")).toBe("This is now the default campaign.");
		expect((await admin("GET", `/apps/${app.appid}`)).body.defaultcampaignid).toBe(second.body.campaignid);
		const { entries } = (await admin("GET", `/apps/${app.appid}/audit?actor=${encodeURIComponent(manager.email)}`)).body;
		expect(entries[0]).toMatchObject({ action: "app.update", changes: { defaultcampaignid: { after: second.body.campaignid } } });
		// A viewer still may not.
		const viewer = await memberOf(app, "viewer");
		expect((await viewer.post(`/dashboard/apps/${app.appid}/campaigns/${app.campaignid}/default`, {})).status).toBe(303);
		expect((await admin("GET", `/apps/${app.appid}`)).body.defaultcampaignid).toBe(second.body.campaignid);
	});

	it("a review comment typed in the dashboard is stored with LF line breaks, not the browser's CR LF", async () => {
		const session = await signIn();
		const app = await createApp();
		const phone = `+1555${Math.floor(Math.random() * 1e7)}`;
		const ref = await registerUser(app, { email: `ref-crlf@x.com`, phone });
		const friend = await registerUser(app, { email: `friend-crlf@x.com`, phone, referrercode: ref.referralcode });
		await conversion(app, friend.userkey);
		await Promise.all([flushLedger(app, ref.userkey), flushLedger(app, friend.userkey)]);
		const { rewards } = (await admin("GET", `/apps/${app.appid}/rewards?status=Suspicious`)).body;
		const id = rewards.find((r: { userkey: string }) => r.userkey === ref.userkey).rewarddtlid;
		expect(
			(await session.post(`/dashboard/apps/${app.appid}/review`, { ids: id, action: "Rejected", message: "line one\r\nline two" })).status,
		).toBe(303);
		const status = await app.api("checkrewardstatus", { rewarddtlid: id });
		expect(status.body.comment).toBe("line one\nline two");
	});

	it("campaign form errors sit on the field of the row they were typed in (from 1, counting every row)", async () => {
		const session = await signIn();
		const app = await createApp();
		const rule = (i: number, eventname: string, reward: string) => ({
			[`r${i}_eventname`]: eventname,
			[`r${i}_rewardusertype`]: "Referrer",
			[`r${i}_reward`]: reward,
			[`r${i}_rewardunit`]: "USD",
		});
		const res = await session.post(`/dashboard/apps/${app.appid}/campaigns/${app.campaignid}`, {
			campaignname: "Renamed",
			rewardtype: "Wallet",
			...rule(0, "Signup", "5"),
			...rule(1, "", ""),
			...rule(2, "Purchase", "-5"),
		});
		expect(res.status).toBe(400);
		const html = await res.text();
		// Both mistakes at once, each on its own field (issue 48), in words, never the API's paths.
		expect(html).toMatch(/id="f-r2_reward" aria-invalid="true" aria-describedby="f-r2_reward-error"/);
		expect(html).toContain('<p class="field-error" id="f-r2_reward-error">The reward is an amount of 0 or more');
		expect(html).toMatch(/id="f-rewardtype" aria-invalid="true"/);
		expect(html).toContain('href="#f-r2_reward"');
		expect(html).not.toContain("rewardrules.");
		// Shown again as typed: the row labelled row 3 holds the -5, row 2 is still the blank one.
		expect(html).toMatch(/<legend>New reward \(row 3\)<\/legend>(?:(?!<\/fieldset>)[\s\S])*value="-5"/);
		expect(html).toContain("<legend>New reward (row 2)</legend>");
		expect((await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body.campaignname).not.toBe("Renamed");
	});

	it("members are spoken to as members, and see only the tabs their role may use", async () => {
		const app = await createApp();
		const reviewer = await memberOf(app, "reviewer");
		const refused = await reviewer.get(`/dashboard/apps/${app.appid}/team`);
		expect(refused.status).toBe(403);
		const text = await refused.text();
		expect(text).toContain("you are a reviewer in this app");
		expect(text).not.toContain("token");
		const overview = await (await reviewer.get(`/dashboard/apps/${app.appid}`)).text();
		expect(overview).toContain(`href="/dashboard/apps/${app.appid}/review"`);
		expect(overview).not.toContain(`href="/dashboard/apps/${app.appid}/team"`);
		const review = await (await reviewer.get(`/dashboard/apps/${app.appid}/review`)).text();
		expect(review).not.toContain(`href="/dashboard/apps/${app.appid}/team"`);
		const owner = await memberOf(app, "owner");
		expect(await (await owner.get(`/dashboard/apps/${app.appid}`)).text()).toContain(`href="/dashboard/apps/${app.appid}/team"`);
		// A token is still told it is a token.
		const token = (await admin("POST", `/apps/${app.appid}/tokens`, { name: "script", role: "viewer" })).body.token;
		const { request } = await import("../support/api");
		const res = await request(`/admin/v1/apps/${app.appid}/tokens`, { headers: { authorization: `Bearer ${token}` } });
		expect(((await res.json()) as { message: string }).message).toContain("this token is a viewer");
	});

	it("the app settings form keeps what was typed when it fails validation", async () => {
		const session = await signIn();
		const app = await createApp();
		const res = await session.post(`/dashboard/apps/${app.appid}`, {
			name: "Typed new name",
			landingurl: "https://typed.example.com/landing",
			webhookurl: "not a url at all",
			emailsender: "",
			frameorigin: "",
			timezone: "Europe/Paris",
		});
		expect(res.status).toBe(400);
		const html = await res.text();
		expect(html).toContain('value="Typed new name"');
		expect(html).toContain('value="https://typed.example.com/landing"');
		expect(html).toContain('value="not a url at all"');
		expect(html).toMatch(/role="alert"[^>]*>[^<]*Webhook URL must be an http\(s\) URL/);
		expect(html).toMatch(/id="f-webhookurl"[^>]*aria-invalid="true"/);
		// Nothing was saved.
		expect((await admin("GET", `/apps/${app.appid}`)).body.name).toBe("Test app");
	});

	it("a reward's page shows the reward: amount, status, owner, event, payout state, and its history", async () => {
		const session = await signIn();
		const app = await createApp();
		const ref = await registerUser(app, { email: "owner-of-reward@x.com" });
		const friend = await registerUser(app, { email: "friend-of-reward@x.com", referrercode: ref.referralcode });
		await conversion(app, friend.userkey);
		await Promise.all([flushLedger(app, ref.userkey), flushLedger(app, friend.userkey)]);
		const { rewards } = (await admin("GET", `/apps/${app.appid}/rewards?userkey=${ref.userkey}`)).body;
		const id = rewards[0].rewarddtlid;
		const html = await (await session.get(`/dashboard/apps/${app.appid}/rewards/${id}`)).text();
		const facts = /<dl class="props" data-testid="reward">([\s\S]*?)<\/dl>/.exec(html)?.[1] ?? "";
		expect(facts).toContain(`${Number(rewards[0].reward).toFixed(2)} ${rewards[0].rewardunit}`);
		expect(facts).toContain(rewards[0].rewardstatus);
		expect(facts).toContain("owner-of-reward@x.com");
		expect(facts).toContain("friend-of-reward@x.com");
		expect(facts).toContain(`${rewards[0].eventname}, campaign ${app.campaignid}`);
		expect(facts).toContain("Payout");
		expect(html).toContain("Who changed it");
		expect(
			(await admin("GET", `/apps/${app.appid}/rewards?rewarddtlid=${id}`)).body.rewards.map((r: { rewarddtlid: string }) => r.rewarddtlid),
		).toEqual([id]);
	});
});
