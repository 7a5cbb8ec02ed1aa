// The bench's growing-database mode (issue 19): does any hot path's cost grow
// with the size of the database? A small app is measured, then a large app is
// seeded through the admin bulk import (users with referrers; their events,
// conversions, reminders and share-link clicks added in SQL on the local D1),
// then the same paths are measured in the large app and again in the small
// app. A scan that is not bounded by the app slows every tenant, so the small
// app after the seeding matters as much as the large app. See bench/README.md.
import { median } from "./stats.mjs";

const CHUNK = 1000;
const GROWTH = "SaaS_Referrals";
const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const round = (n, digits = 2) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null);

/**
 * Retries a request whose socket the server dropped: `wrangler d1 execute` (the activity seeding) can take
 * long enough for wrangler dev to close idle keep-alive sockets, and the next request on one fails at once.
 */
async function retried(request) {
	for (let attempt = 1; ; attempt++) {
		try {
			return await request();
		} catch (error) {
			if (attempt >= 3 || !(error instanceof TypeError)) throw error;
			await new Promise((r) => setTimeout(r, 200));
		}
	}
}

/** The paths measured, in this order, and how each request is made from an app's probe users. */
const PATHS = ["register", "conversion", "applyreferrercode", "remindfriend", "friends", "share-link"];

/**
 * @param {{ base: string, admin: Function, log: Function, quiesce: (label: string) => Promise<unknown>,
 *   sql: ((statement: string) => void) | null, users: number, samples: number, concurrency: number }} ctx
 */
export async function runGrowth(ctx) {
	const { base, log } = ctx;
	const admin = (...args) => retried(() => ctx.admin(...args));
	let seq = 0;
	const runId = Date.now();
	const email = (tag) => `g${runId}-${tag}-${++seq}@growth.example.com`;
	const customid = () => `${runId}${String(++seq).padStart(9, "0")}`;
	let ipSeq = 0;
	const nextIp = () => {
		const n = ++ipSeq;
		return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
	};

	async function newApp(name) {
		const app = await admin("POST", "/apps", { name, landingurl: "https://example.com/join" });
		const { campaignid } = await admin("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: name,
			velocitythreshold: 0,
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
			],
		});
		const auth = { apikey: app.apikey, privatekey: app.privatekey };
		const call = async (op, body) => {
			const res = await retried(() =>
				fetch(`${base}/saas/v1_0/${op}`, {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ ...auth, ...body }),
				}),
			);
			const json = await res.json();
			if (!res.ok) throw new Error(`${op}: ${res.status} ${JSON.stringify(json)}`);
			return json;
		};
		const importUsers = async (users) => (await admin("POST", `/apps/${app.appid}/users:import`, { users })).users;
		return { appid: app.appid, campaignid, auth, call, importUsers };
	}

	/**
	 * `n` users in chunks of 1,000 through the import, `concurrency` calls at a time: per chunk 10% referrers,
	 * 40% friends of a referrer of an earlier chunk (about 4 friends per referrer) and 50% on their own.
	 */
	async function seedUsers(app, n, tag) {
		const codes = [(await app.call("register", { email: email(`${tag}-seed`) })).referralcode];
		const chunks = Math.ceil(n / CHUNK);
		let next = 0;
		let done = 0;
		const started = Date.now();
		const worker = async () => {
			while (next < chunks) {
				const c = next++;
				const size = Math.min(CHUNK, n - c * CHUNK);
				const pool = codes.slice();
				const users = Array.from({ length: size }, (_, i) => {
					const u = { email: email(tag) };
					if (i >= 100 && i < 500) u.referrercode = pool[(c * 7919 + i * 104729) % pool.length];
					return u;
				});
				const created = await app.importUsers(users);
				for (const u of created.slice(0, 100)) codes.push(u.referralcode);
				done += size;
				if (c % 50 === 49) log(`  ${tag}: ${done} users imported in ${round((Date.now() - started) / 1000, 1)} s`);
			}
		};
		await Promise.all(Array.from({ length: Math.min(ctx.concurrency, chunks) }, worker));
		return { users: done, importSeconds: round((Date.now() - started) / 1000, 1) };
	}

	/** Events, conversions, reminders and clicks of the seeded users, in SQL on the local D1 (the API would take hours). */
	function seedActivity(app) {
		if (!ctx.sql) return null;
		const started = Date.now();
		const mine = `appid = '${app.appid}' AND referrer_userid IS NOT NULL`;
		ctx.sql(
			`INSERT INTO conversion_events (appid, customid, userid, eventname, transactionvalue, extrainfo, campaignid, growthhack, created_at, decision)
			 SELECT appid, 'seed' || userid, userid, 'Purchase', 100, NULL, campaignid, '${GROWTH}', created_at, '[]' FROM users WHERE ${mine} AND userid % 2 = 0`,
		);
		ctx.sql(`UPDATE users SET status = 'Converted', conversion_id = 'seed' || userid WHERE ${mine} AND userid % 2 = 0`);
		ctx.sql(
			`INSERT INTO friend_reminders (friend_userid, last_sent_at, token) SELECT userid, created_at, 'seed' || userid FROM users WHERE ${mine} AND userid % 5 = 1`,
		);
		ctx.sql(
			`INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent)
			 SELECT referralcode, created_at, NULL, 'seed' FROM users WHERE appid = '${app.appid}' AND userid % 10 = 3`,
		);
		return { seconds: round((Date.now() - started) / 1000, 1) };
	}

	/** A probe referrer with pools of users for each path, made the same way in every app (so only the database differs). */
	async function probes(app) {
		const n = ctx.samples + 5;
		const referrer = await app.call("register", { email: email("probe-ref") });
		const friends = await app.importUsers(
			Array.from({ length: 2 * n }, () => ({ email: email("probe-friend"), referrercode: referrer.referralcode })),
		);
		const loners = await app.importUsers(Array.from({ length: n }, () => ({ email: email("probe-loner") })));
		return {
			referrer,
			converting: friends.slice(0, n).map((u) => u.userkey),
			reminded: friends.slice(n).map((u) => u.userkey),
			loners: loners.map((u) => u.userkey),
		};
	}

	/** The request of `path` number `i` in `app`. */
	function request(path, app, p, i) {
		const op = (name, body) => ({
			path: `/saas/v1_0/${name}`,
			init: {
				method: "POST",
				// x-count-d1: the request's D1 time in its answer (src/http/d1-metrics.ts).
				headers: { "content-type": "application/json", "x-count-d1": "1" },
				body: JSON.stringify({ ...app.auth, ...body }),
			},
		});
		switch (path) {
			case "register":
				return op("register", { email: email("probe-new"), referrercode: p.referrer.referralcode });
			case "conversion":
				return op("registerconversionevent", {
					userkey: p.converting[i],
					eventname: "Purchase",
					transactionvalue: 100,
					customid: customid(),
					growthhack: GROWTH,
				});
			case "applyreferrercode":
				return op("applyreferrercode", { userkey: p.loners[i], referrercode: p.referrer.referralcode });
			case "remindfriend":
				return op("remindfriend", { userkey: p.referrer.userkey, frienduserkey: p.reminded[i] });
			case "friends":
				return op("getfriendsandrewards", { userkey: p.referrer.userkey });
			default:
				return {
					path: `/r/${p.referrer.referralcode}`,
					init: { redirect: "manual", headers: { "cf-connecting-ip": nextIp(), "user-agent": CHROME, "x-count-d1": "1" } },
				};
		}
	}

	/** Sequential requests of each path: the median latency (the path's cost) and the median D1 time. */
	async function measure(app, label) {
		const p = await probes(app);
		const out = {};
		for (const path of PATHS) {
			await ctx.quiesce(`${label} ${path}`);
			const latencies = [];
			const d1 = [];
			for (let i = 0; i < ctx.samples + 5; i++) {
				const { path: url, init } = request(path, app, p, i);
				const started = performance.now();
				const res = await retried(() => fetch(base + url, init));
				await res.arrayBuffer();
				const ms = performance.now() - started;
				if (res.status >= 400) throw new Error(`${label} ${path}: ${res.status}`);
				// The first calls warm the isolate's caches (app lookup) and are not counted.
				if (i < 5) continue;
				latencies.push(ms);
				if (res.headers.has("x-d1-ms")) d1.push(Number(res.headers.get("x-d1-ms")));
			}
			out[path] = { p50: round(median(latencies)), d1ms: d1.length ? median(d1) : null };
			log(`  ${label} ${path}: p50 ${out[path].p50} ms${out[path].d1ms === null ? "" : `, D1 ${out[path].d1ms} ms`}`);
		}
		return out;
	}

	log(`growth mode: small app, then a large app of ${ctx.users} users, ${ctx.samples} sequential requests per path`);
	const small = await newApp(`Growth small ${runId}`);
	const smallSeed = await seedUsers(small, 1000, "small");
	seedActivity(small);
	const before = await measure(small, "small app before");

	const large = await newApp(`Growth large ${runId}`);
	const seedStarted = Date.now();
	const largeSeed = await seedUsers(large, ctx.users, "large");
	log(`seeded ${largeSeed.users} users in ${largeSeed.importSeconds} s`);
	const activity = seedActivity(large);
	const seedSeconds = round((Date.now() - seedStarted) / 1000, 1);
	if (activity) log(`seeded events, conversions, reminders and clicks in ${activity.seconds} s`);
	await ctx.quiesce("seeding the large app");
	const inLarge = await measure(large, "large app");
	const after = await measure(small, "small app after");

	const paths = {};
	for (const path of PATHS) {
		const ratio = (x) => (before[path].p50 ? x / before[path].p50 : null);
		paths[path] = {
			smallBefore: before[path].p50,
			large: inLarge[path].p50,
			smallAfter: after[path].p50,
			growth: round(Math.max(ratio(inLarge[path].p50), ratio(after[path].p50))),
			d1ms: { smallBefore: before[path].d1ms, large: inLarge[path].d1ms, smallAfter: after[path].d1ms },
		};
	}
	return {
		seeded: {
			users: largeSeed.users,
			referredShare: 0.4,
			eventsShare: activity ? 0.2 : 0,
			remindersShare: activity ? 0.08 : 0,
			clicksShare: activity ? 0.1 : 0,
			importSeconds: largeSeed.importSeconds,
			seedSeconds,
			smallAppUsers: smallSeed.users,
		},
		samples: ctx.samples,
		paths,
	};
}
