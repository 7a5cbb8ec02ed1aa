import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { scheduled } from "../../src/scheduled";
import { createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";

const click = (code: string, ip: string, agent: string) =>
	request(`/r/${code}`, { headers: { "cf-connecting-ip": ip, "user-agent": agent }, redirect: "manual" });

describe("share-link click log", () => {
	it("keeps each click's IP hash and user agent, comparable with the user's own IP hash", async () => {
		const app = await createApp();
		const ann = (await app.api("register", { email: "ann@example.com", ipaddress: "192.0.2.44" })).body;
		expect((await click(ann.referralcode, "192.0.2.44", "Firefox/1")).status).toBe(302);
		expect((await click(ann.referralcode, "192.0.2.45", "Chrome/2")).status).toBe(302);
		await flushClicks(ann.referralcode);
		const rows = await env.DB.prepare("SELECT iphash, useragent FROM link_click_log WHERE referralcode = ? ORDER BY clickid")
			.bind(ann.referralcode)
			.all<{ iphash: string; useragent: string }>();
		const own = await env.DB.prepare("SELECT value FROM user_identifiers WHERE kind = 'ip' AND appid = ?")
			.bind(app.appid)
			.first<{ value: string }>();
		expect(rows.results.map((r) => r.useragent)).toEqual(["Firefox/1", "Chrome/2"]);
		expect(rows.results[0]?.iphash).toBe(own?.value);
		expect(rows.results[1]?.iphash).not.toBe(own?.value);
		const daily = await env.DB.prepare("SELECT SUM(clicks) AS n FROM link_clicks WHERE referralcode = ?").bind(ann.referralcode).first();
		expect(daily).toEqual({ n: 2 });
	});

	it("the scheduled clean-up deletes per-click rows older than 30 days and keeps the daily counts", async () => {
		const app = await createApp();
		const ann = (await app.api("register", { email: "ann@example.com" })).body;
		const now = Date.parse("2026-11-22T03:17:00.000Z");
		const at = (days: number) => new Date(now - days * 86_400_000).toISOString();
		for (const [days, agent] of [
			[31, "old"],
			[30.01, "just-expired"],
			[29.9, "recent"],
			[0, "today"],
		] as const) {
			await env.DB.prepare("INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent) VALUES (?, ?, NULL, ?)")
				.bind(ann.referralcode, at(days), agent)
				.run();
		}
		await env.DB.prepare("INSERT INTO link_clicks (referralcode, day, clicks) VALUES (?, '2026-10-01', 7)").bind(ann.referralcode).run();

		const ctx = createExecutionContext();
		await scheduled(createScheduledController({ scheduledTime: now, cron: "17 3 * * *" }), env, ctx);
		await waitOnExecutionContext(ctx);

		const left = await env.DB.prepare("SELECT useragent FROM link_click_log WHERE referralcode = ? ORDER BY clickid")
			.bind(ann.referralcode)
			.all();
		expect(left.results.map((r) => r.useragent)).toEqual(["recent", "today"]);
		const daily = await env.DB.prepare("SELECT clicks FROM link_clicks WHERE referralcode = ? AND day = '2026-10-01'")
			.bind(ann.referralcode)
			.first();
		expect(daily).toEqual({ clicks: 7 });
	});
});
