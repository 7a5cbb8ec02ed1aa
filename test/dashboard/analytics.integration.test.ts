import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { localDay } from "../../src/domain/time-zone";
import { admin, createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";
import { conversion, flushLedger, newCustomId, registerUser, signIn } from "../support/dashboard";
import { until } from "../support/until";

/** Counters written straight into slots, as the service's hooks write them (src/db/stats.ts). */
async function putSlots(appid: string, campaignid: number, slots: [string, string, number, string?][]) {
	await env.DB.batch(
		slots.map(([slot, metric, value, unit]) =>
			env.DB.prepare("INSERT INTO stats_slots (appid, campaignid, slot, metric, unit, value) VALUES (?, ?, ?, ?, ?, ?)").bind(
				appid,
				campaignid,
				slot,
				metric,
				unit ?? "",
				value,
			),
		),
	);
}

const dayOf = (stats: Record<string, any>, day: string) => stats.days.find((d: { day: string }) => d.day === day);

describe("analytics in the app's time zone", { timeout: 60_000 }, () => {
	it("counts days in the app's IANA zone, daylight saving and half-hour offsets included", async () => {
		const app = await createApp();
		await putSlots(app.appid, app.campaignid, [
			["2026-03-28T23:30", "conversions", 1], // Paris 00:30 on the 29th (UTC+1)
			["2026-03-29T21:30", "conversions", 2], // Paris 23:30 on the 29th (UTC+2 since 01:00 UTC)
			["2026-03-29T22:00", "conversions", 4], // Paris 00:00 on the 30th
			["2026-03-29T18:15", "signups", 8], // Kolkata 23:45 on the 29th; 18:30 would be the 30th
			["2026-03-29T18:30", "signups", 16],
		]);
		const range = "from=2026-03-28&to=2026-03-30";
		const utc = (await admin("GET", `/apps/${app.appid}/stats?${range}`)).body;
		expect(utc.timezone).toBe("UTC");
		expect([28, 29, 30].map((d) => dayOf(utc, `2026-03-${d}`).conversions)).toEqual([1, 6, 0]);
		await admin("PATCH", `/apps/${app.appid}`, { timezone: "Europe/Paris" });
		const paris = (await admin("GET", `/apps/${app.appid}/stats?${range}`)).body;
		expect(paris.timezone).toBe("Europe/Paris");
		expect([28, 29, 30].map((d) => dayOf(paris, `2026-03-${d}`).conversions)).toEqual([0, 3, 4]);
		await admin("PATCH", `/apps/${app.appid}`, { timezone: "Asia/Kolkata" });
		const kolkata = (await admin("GET", `/apps/${app.appid}/stats?${range}`)).body;
		expect([29, 30].map((d) => dayOf(kolkata, `2026-03-${d}`).signups)).toEqual([8, 16]);

		const session = await signIn();
		const page = await (await session.get(`/dashboard/apps/${app.appid}/analytics?${range}`)).text();
		expect(page).toContain("Days are counted in <strong>Asia/Kolkata</strong>");
		expect(page).toMatch(/<tr data-day="2026-03-29">(?:<td[^>]*>[^<]*<\/td>){2}<td class="num">8<\/td>/);
	});

	it("counts live sign-ups and conversions on the local day of the app's zone", async () => {
		const app = await createApp();
		await admin("PATCH", `/apps/${app.appid}`, { timezone: "Pacific/Kiritimati" });
		const ref = await registerUser(app, { email: "live-ref@x.com" });
		const friend = await registerUser(app, { email: "live-friend@x.com", referrercode: ref.referralcode });
		await conversion(app, friend.userkey, "Purchase", { transactionvalue: "20" });
		const today = localDay("Pacific/Kiritimati", Date.now());
		// The stats follow the projection of the event (issue 49).
		const stats = await until(
			"the conversion counted",
			async () => (await admin("GET", `/apps/${app.appid}/stats`)).body,
			(body) => body.totals.conversions > 0,
		);
		expect(stats.to).toBe(today);
		expect(dayOf(stats, today)).toMatchObject({ signups: 2, referredsignups: 1, conversions: 1 });
	});

	it("keeps amounts per currency and leaves rejected and refunded rewards out of what was earned", async () => {
		const app = await createApp({
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 5, rewardunit: "EUR" },
				{ rewardusertype: "Referrer", eventname: "Renewal", reward: 7, rewardunit: "USD" },
			],
			autoapprove: false,
		});
		const ref = await registerUser(app, { email: "cur-ref@x.com" });
		const friend = await registerUser(app, { email: "cur-friend@x.com", referrercode: ref.referralcode });
		await request(`/r/${ref.referralcode}`, { redirect: "manual" });
		await flushClicks(ref.referralcode);
		await conversion(app, friend.userkey, "Purchase", { customid: newCustomId(), transactionvalue: "50" });
		const renewal = newCustomId();
		await conversion(app, friend.userkey, "Renewal", { customid: renewal, transactionvalue: "50" });
		await Promise.all([flushLedger(app, ref.userkey), flushLedger(app, friend.userkey)]);
		const today = new Date().toISOString().slice(0, 10);
		const stats = async () => (await admin("GET", `/apps/${app.appid}/stats?from=${today}&to=${today}`)).body;
		expect((await stats()).totals.rewardamount).toEqual({ USD: 17, EUR: 5 });

		const { rewards } = (await admin("GET", `/apps/${app.appid}/rewards?userkey=${friend.userkey}`)).body;
		const rejected = await admin("POST", `/apps/${app.appid}/rewards/status`, {
			changes: [{ rewarddtlid: rewards[0].rewarddtlid, rewardstatus: "Rejected" }],
		});
		expect(rejected.status).toBe(200);
		expect((await app.api("reverseconversionevent", { customid: renewal, reason: "refund" })).status).toBe(200);
		await flushLedger(app, ref.userkey);
		const after = await stats();
		expect(after.totals.rewardamount).toEqual({ USD: 10, EUR: 0 });
		expect(after.totals.rewardscreated).toBe(3);
		expect(after.units).toEqual(["EUR", "USD"]);
		expect(after.funnel).toEqual({
			clicks: 1,
			signups: 1,
			conversions: 1,
			signuprate: 1,
			conversionrate: 1,
			clickconversionrate: 1,
		});
		expect(after.campaigns).toEqual([expect.objectContaining({ campaignid: app.campaignid, clicks: 1, signups: 1, conversions: 1 })]);

		const session = await signIn();
		const csv = (await (await session.get(`/dashboard/apps/${app.appid}/analytics.csv?from=${today}&to=${today}`)).text()).split("\r\n");
		expect(csv[0]).toBe(
			"day,clicks,signups,referred_signups,conversions,rewards_created,reward_amount_EUR,reward_amount_USD,redeemed_EUR,redeemed_USD",
		);
		expect(csv[1]).toBe(`${today},1,2,1,1,3,0,10,0,0`);
		const page = await (await session.get(`/dashboard/apps/${app.appid}/analytics?from=${today}&to=${today}`)).text();
		expect(page).toContain("Earned USD");
		expect(page).toContain("Earned EUR");
		expect(page).toMatch(/<tr data-funnel="all">.*?100%/);
	});

	it("reads at a glance: totals first, the days with activity, quiet days folded, a chart over the whole range", async () => {
		const app = await createApp();
		await putSlots(app.appid, app.campaignid, [
			["2026-03-10T12:00", "conversions", 1],
			["2026-03-20T12:00", "signups", 3],
		]);
		const session = await signIn();
		const page = await (await session.get(`/dashboard/apps/${app.appid}/analytics?from=2026-03-01&to=2026-03-30`)).text();
		// Two rows, not thirty: the active days, newest first.
		expect([...page.matchAll(/<tr data-day="([^"]+)"/g)].map((m) => m[1])).toEqual(["2026-03-20", "2026-03-10"]);
		const quiet = /<details data-testid="quiet-days"><summary>(.*?)<\/summary>(.*?)<\/details>/s.exec(page);
		expect(quiet?.[1]).toBe("28 days without activity");
		expect([...(quiet?.[2] ?? "").matchAll(/<li>(.*?)<\/li>/g)].map((m) => m[1])).toEqual([
			"2026-03-21 to 2026-03-30 (10 days)",
			"2026-03-11 to 2026-03-19 (9 days)",
			"2026-03-01 to 2026-03-09 (9 days)",
		]);
		// Totals before the chart; the chart spans the whole range, quiet days flat (issue 48), on whole-number ticks.
		expect(page.indexOf('data-testid="totals"')).toBeLessThan(page.indexOf("<svg"));
		const svg = /<svg.*?<\/svg>/s.exec(page)?.[0] ?? "";
		expect(svg).toContain("2026-03-01 to 2026-03-30");
		const dayLabels = [...svg.matchAll(/>(\d{4}-\d\d-\d\d)<\/text>/g)].map((m) => m[1]);
		expect(dayLabels).toEqual(["2026-03-01", "2026-03-15", "2026-03-30"]);
		const tickLabels = [...svg.matchAll(/text-anchor="end"[^>]*>(\d+)<\/text>/g)].map((m) => m[1]);
		expect(tickLabels).toEqual(["0", "1", "2", "3"]);

		// A range without activity says so instead of drawing a flat line.
		const empty = await (await session.get(`/dashboard/apps/${app.appid}/analytics?from=2026-04-01&to=2026-04-30`)).text();
		expect(empty).toContain("No activity from 2026-04-01 to 2026-04-30.");
		expect(empty).not.toContain("<svg");
		expect(empty).toContain("30 days without activity");
	});
});
