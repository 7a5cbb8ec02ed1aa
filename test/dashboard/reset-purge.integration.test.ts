import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { RESET_EMAILS_PER_HOUR, RESET_TTL_MS } from "../../src/dashboard/reset";
import { app as worker } from "../../src/http/app";
import { scheduled } from "../../src/scheduled";
import { admin, createApp } from "../support/api";
import { BASE, csrfOf, fetchPage } from "../support/dashboard";
import { acceptFromMailbox } from "../support/mailbox";

/**
 * Issue 47's review: expired password resets (used or not) were never
 * deleted, so password_resets grew by a row per reset request for ever. The
 * every-minute job purges them, and keeps the unexpired ones the reset cap
 * counts (migration 0041).
 */

const PASSWORD = "a long enough password";
const EVERY_MINUTE = "* * * * *";

const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0] ?? "";

/** POST /dashboard/reset for `who`, waiting for its background work (the reset row and its email). */
async function requestReset(who: string) {
	const page = await fetchPage("/dashboard/reset");
	const ctx = createExecutionContext();
	const res = await worker.fetch(
		new Request(`${BASE}/dashboard/reset`, {
			method: "POST",
			redirect: "manual",
			headers: { cookie: cookieOf(page, "dash_login"), "content-type": "application/x-www-form-urlencoded" },
			body: new URLSearchParams({ _csrf: csrfOf(await page.text()), email: who }),
		}),
		env,
		ctx,
	);
	await waitOnExecutionContext(ctx);
	expect(res.status).toBe(200);
}

const resetsOf = async (who: string) =>
	(
		await env.DB.prepare(
			`SELECT expires_at, used_at FROM password_resets WHERE personid = (SELECT personid FROM people WHERE email = ?)
			 ORDER BY expires_at`,
		)
			.bind(who)
			.all<{ expires_at: number; used_at: string | null }>()
	).results;

async function runEveryMinuteJobs(at: number) {
	const ctx = createExecutionContext();
	await scheduled(createScheduledController({ cron: EVERY_MINUTE, scheduledTime: at }), env, ctx);
	await waitOnExecutionContext(ctx);
}

describe("expired password resets are purged by the every-minute job", () => {
	it("deletes expired resets, used or not, and keeps the unexpired ones the cap counts", async () => {
		const app = await createApp();
		const who = `purge-${crypto.randomUUID()}@example.com`;
		expect((await admin("POST", `/apps/${app.appid}/members`, { email: who, role: "viewer" })).status).toBe(201);
		await acceptFromMailbox(app.appid, who, PASSWORD);

		for (let i = 0; i < RESET_EMAILS_PER_HOUR; i++) await requestReset(who);
		const made = await resetsOf(who);
		expect(made).toHaveLength(RESET_EMAILS_PER_HOUR);
		// One of them used (as the reset page does: used_at set, the row kept while the cap counts it).
		await env.DB.prepare("UPDATE password_resets SET used_at = ? WHERE expires_at = ?")
			.bind(new Date().toISOString(), made[0]?.expires_at)
			.run();

		// Within the hour: every row is still counted by the cap, so none goes (the used one included).
		await runEveryMinuteJobs(Date.now());
		expect(await resetsOf(who)).toHaveLength(RESET_EMAILS_PER_HOUR);

		// Past the hour of the first two only: they go, the third stays.
		const third = made[2]?.expires_at ?? 0;
		await env.DB.prepare("UPDATE password_resets SET expires_at = expires_at - ? WHERE expires_at < ?").bind(RESET_TTL_MS, third).run();
		await runEveryMinuteJobs(Date.now());
		expect((await resetsOf(who)).map((r) => r.expires_at)).toEqual([third]);

		// Past every hour: nothing of the person's resets is left.
		await runEveryMinuteJobs(third + 1);
		expect(await resetsOf(who)).toEqual([]);
	});
});
