import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { operations } from "../../src/operations";
import { mulberry32 } from "../ledger/support";
import { ADMIN_TOKEN, admin, createApp, request } from "../support/api";

/**
 * Seeded fuzz of every public operation (discovered from the `operations`
 * registry, so operations added later are fuzzed too) and of the admin API:
 * wrong types, huge and deep structures, control characters, bad escapes,
 * prototype keys, huge arrays, extreme numbers, broken JSON, other tenants'
 * ids. Every answer must be JSON, never 5xx, and the data that existed
 * before (a victim app with users and rewards) must be exactly as it was.
 */

const SEED = 0x5eed10;
const BODIES_PER_OPERATION = 130;
const ADMIN_BODIES = 420;
const CONCURRENCY = 8;

type Rand = () => number;
const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;

/** The field names of an operation's zod schema (an object, or an object with refinements). */
function schemaKeys(schema: unknown): string[] {
	const s = schema as { shape?: Record<string, unknown>; _zod?: { def?: { shape?: Record<string, unknown> } } };
	return Object.keys(s.shape ?? s._zod?.def?.shape ?? {});
}

const SPELLINGS = [
	"userKey",
	"emailId",
	"UserIdInstore",
	"AppUserName",
	"campaignId",
	"growthHack",
	"extraInfo",
	"existinguser",
	"pageIndex",
];
const PROTO_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty"];

function deepArray(levels: number): unknown {
	let v: unknown = "x";
	for (let i = 0; i < levels; i++) v = [v];
	return v;
}
function deepObject(levels: number): unknown {
	let v: unknown = 1;
	for (let i = 0; i < levels; i++) v = { a: v };
	return v;
}

interface Victim {
	appid: string;
	apikey: string;
	userkeys: string[];
	rewardids: string[];
	codes: string[];
	campaignid: number;
}

function hostileString(rand: Rand, victim: Victim): string {
	return pick(rand, [
		"",
		" ",
		"a",
		"x".repeat(1 + Math.floor(rand() * 3000)),
		"Eve\r\nBcc: victim@evil.test",
		"Mallory%0D%0ABcc:+victim@evil.test",
		"nul\u0000byte",
		"%00",
		"\u001b[31mred",
		"del\u007f",
		"\ud800",
		"lone\udc00low",
		"%",
		"%zz",
		"%E0%A4%A",
		"%C0%AE%C0%AE/",
		"😀 Zoë 日本語 \u202eRTL",
		"' OR 1=1 --",
		'"); DROP TABLE users; --',
		"<script>alert(1)</script>",
		"javascript:alert(1)",
		"__proto__",
		"constructor",
		"1e309",
		"-0",
		"NaN",
		"Infinity",
		"99999999999999999999999",
		"-1",
		"0",
		"1.5",
		"a+b@example.com",
		"not-an-email@",
		"@example.com",
		"Approved",
		"Under Review",
		"Rewarded",
		"SaaS_Referrals",
		pick(rand, victim.userkeys),
		pick(rand, victim.rewardids),
		pick(rand, victim.codes),
		`${pick(rand, victim.userkeys)}-1`,
		"u0000000000000000000-1",
		String(victim.campaignid),
		"http://169.254.169.254/latest/meta-data/",
	]);
}

function hostileValue(rand: Rand, victim: Victim, depth = 0): unknown {
	const r = rand();
	if (r < 0.45) return hostileString(rand, victim);
	if (r < 0.6)
		return pick(rand, [0, -1, 1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 1, 5e-324, 2 ** 63, 1.2345678901234568e29, victim.campaignid]);
	if (r < 0.67) return pick(rand, [true, false, null]);
	if (r < 0.72) return pick(rand, [deepArray(40), deepObject(40), deepArray(31), deepObject(20)]);
	if (r < 0.76) return Array.from({ length: pick(rand, [1_001, 1_500]) }, (_, i) => `r${i}`);
	if (r < 0.84 || depth > 2) return pick(rand, [[], {}, [null], [""], JSON.parse('{"__proto__": {"admin": true}}')]);
	if (r < 0.92) return Array.from({ length: 1 + Math.floor(rand() * 4) }, () => hostileValue(rand, victim, depth + 1));
	const obj: Record<string, unknown> = {};
	for (let i = 0; i < 1 + Math.floor(rand() * 4); i++) {
		obj[pick(rand, ["rewarddtlid", "rewardstatus", "message", "coupon", ...PROTO_KEYS, "x"])] = hostileValue(rand, victim, depth + 1);
	}
	return obj;
}

function randomCase(rand: Rand, key: string): string {
	return rand() < 0.3 ? [...key].map((c) => (rand() < 0.5 ? c.toUpperCase() : c)).join("") : key;
}

/** A request body as text: mostly a JSON object of hostile fields, sometimes broken JSON. */
function publicBody(rand: Rand, keys: string[], creds: Record<string, unknown>, victim: Victim): string {
	const r = rand();
	if (r < 0.08) {
		return pick(rand, [
			"",
			"{",
			'{"apikey": "x", "name": "\\x"}',
			'{"a":"\\ud800"}',
			"[]",
			'"text"',
			"null",
			"1e999",
			`{"x":${"[".repeat(5_000)}${"]".repeat(5_000)}}`,
			`\ufeff{"apikey":"a"}`,
			'{"a":1,"a":2}',
			// JSON.stringify, not a template: a hostile credential may be an object without a prototype (no toString).
			`{"apikey": ${JSON.stringify(creds.apikey)}, "privatekey": ${JSON.stringify(creds.privatekey)}, "name": "raw\u0000nul"}`,
			JSON.stringify({ ...creds, filler: "y".repeat(70_000) }),
		]);
	}
	const body: Record<string, unknown> = { ...creds };
	const fields = 1 + Math.floor(rand() * 6);
	for (let i = 0; i < fields; i++) {
		const key = rand() < 0.7 && keys.length ? randomCase(rand, pick(rand, keys)) : pick(rand, [...SPELLINGS, ...PROTO_KEYS, "zzz"]);
		if (key === "__proto__")
			Object.defineProperty(body, key, { value: hostileValue(rand, victim), enumerable: true, configurable: true, writable: true });
		else body[key] = hostileValue(rand, victim);
	}
	return JSON.stringify(body);
}

interface Answer {
	what: string;
	status: number;
	json: unknown;
	problem?: string;
}

async function send(what: string, path: string, init: RequestInit): Promise<Answer> {
	const res = await request(path, init);
	const text = await res.text();
	try {
		const json = JSON.parse(text);
		// Public answers are envelopes ({success, ...}); admin successes are plain objects. Every error has an errorcode.
		const envelope = path.startsWith("/saas/");
		const bad =
			typeof json !== "object" ||
			json === null ||
			(envelope && typeof json.success !== "boolean") ||
			(res.status >= 400 && (json.success !== false || typeof json.errorcode !== "string"));
		return { what, status: res.status, json, problem: bad ? `not an envelope: ${text.slice(0, 200)}` : undefined };
	} catch {
		return { what, status: res.status, json: null, problem: `not JSON (${res.headers.get("content-type")}): ${text.slice(0, 200)}` };
	}
}

/** Everything stored about the victim app, to compare before and after. */
async function snapshot(victim: Victim) {
	const q = (sql: string, ...args: unknown[]) =>
		env.DB.prepare(sql)
			.bind(...args)
			.all()
			.then((r) => r.results);
	const campaigns = "(SELECT campaignid FROM campaigns WHERE appid = ?1)";
	const d1 = {
		apps: await q("SELECT * FROM apps WHERE appid = ?1", victim.appid),
		campaigns: await q("SELECT * FROM campaigns WHERE appid = ?1 ORDER BY campaignid", victim.appid),
		rules: await q(`SELECT * FROM reward_rules WHERE campaignid IN ${campaigns} ORDER BY ruleid`, victim.appid),
		actions: await q(`SELECT * FROM social_actions WHERE campaignid IN ${campaigns} ORDER BY campaignsocialactionid`, victim.appid),
		coupons: await q(`SELECT * FROM coupons WHERE campaignid IN ${campaigns} ORDER BY couponid`, victim.appid),
		users: await q("SELECT * FROM users WHERE appid = ?1 ORDER BY userid", victim.appid),
		events: await q("SELECT * FROM conversion_events WHERE appid = ?1 ORDER BY eventid", victim.appid),
		rewards: await q("SELECT * FROM rewards WHERE appid = ?1 ORDER BY rewarddtlid", victim.appid),
		reminders: await q("SELECT * FROM friend_reminders WHERE friend_userid IN (SELECT userid FROM users WHERE appid = ?1)", victim.appid),
	};
	const ledgers = await Promise.all(
		victim.userkeys.map(async (userkey) => {
			const stub = ledgerFor(env, victim.appid, userkey);
			return { rewards: await stub.listRewards(), balance: await stub.balance() };
		}),
	);
	return JSON.stringify({ d1, ledgers });
}

async function inParallel<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
	const out: T[] = new Array(jobs.length);
	let next = 0;
	await Promise.all(
		Array.from({ length: width }, async () => {
			while (next < jobs.length) {
				const i = next++;
				out[i] = await jobs[i]!();
			}
		}),
	);
	return out;
}

describe("fuzz: hostile bodies on every operation and the admin API", () => {
	it(`seed ${SEED}: no 5xx, only JSON envelopes, nothing that existed changes`, { timeout: 120_000 }, async () => {
		const rand = mulberry32(SEED);
		// The victim: an app with a referrer, a friend, rewards and a coupon.
		const v = await createApp();
		const referrer = (await v.api("register", { email: "rita@example.com", name: "Rita" })).body;
		const friend = (await v.api("register", { email: "fred@example.com", referrercode: referrer.referralcode })).body;
		await v.api("registerconversionevent", { userkey: friend.userkey, eventname: "Signup", customid: "1", growthHack: "SaaS_Referrals" });
		await admin("POST", `/apps/${v.appid}/campaigns/${v.campaignid}/coupons`, { coupons: [{ coupon: "VICTIM-1" }] });
		const rewardids = (await ledgerFor(env, v.appid, referrer.userkey).listRewards()).map((r) => r.rewarddtlid);
		expect(rewardids.length).toBeGreaterThan(0);
		const victim: Victim = {
			appid: v.appid,
			apikey: v.apikey,
			userkeys: [referrer.userkey, friend.userkey],
			rewardids,
			codes: [referrer.referralcode, friend.referralcode],
			campaignid: v.campaignid,
		};
		// The fuzzing tenant, and a scratch app the admin fuzz may change.
		const fuzzer = await createApp();
		const scratch = await createApp();
		// Let the victim's ledgers finish writing their D1 projection (it leaves shortly after each write).
		for (const userkey of victim.userkeys) await ledgerFor(env, victim.appid, userkey).flush();
		const before = await snapshot(victim);

		const jobs: (() => Promise<Answer>)[] = [];
		const names = Object.keys(operations);
		expect(names.length).toBeGreaterThanOrEqual(14);
		for (const name of names) {
			const keys = schemaKeys(operations[name]!.schema);
			for (let i = 0; i < BODIES_PER_OPERATION; i++) {
				const r = rand();
				const creds =
					r < 0.75
						? { apikey: fuzzer.apikey, privatekey: fuzzer.privatekey }
						: r < 0.85
							? { apikey: victim.apikey, privatekey: fuzzer.privatekey }
							: { apikey: hostileValue(rand, victim), privatekey: hostileValue(rand, victim) };
				const text = publicBody(rand, keys, creds, victim);
				const type = rand() < 0.03 ? "text/plain" : "application/json";
				jobs.push(() =>
					send(`${name} ${text.slice(0, 300)}`, `/saas/v1_0/${name}`, { method: "POST", headers: { "content-type": type }, body: text }),
				);
			}
		}

		// Admin: bodies with a poisoned field (must be refused) aimed at the victim, free ones at the scratch app.
		const adminRoutes = [
			{ method: "POST", path: () => "/apps", keys: ["name", "landingurl", "webhookurl", "emailsender"], poison: "name" },
			{ method: "PATCH", path: (id: string) => `/apps/${id}`, keys: ["name", "landingurl", "webhookurl", "emailsender"], poison: "name" },
			{
				method: "POST",
				path: (id: string) => `/apps/${id}/campaigns`,
				keys: ["campaignname", "offertitle", "terms", "rewardrules", "socialactions", "holddays", "customdomain", "campaignstartdate"],
				poison: "campaignname",
			},
			{
				method: "PATCH",
				path: (id: string, c: number) => `/apps/${id}/campaigns/${c}`,
				keys: ["campaignname", "offertitle", "offerdescription", "rewardrules", "socialactions", "autoapprove", "rewardtype", "currency"],
				poison: "campaignname",
			},
			{ method: "POST", path: (id: string, c: number) => `/apps/${id}/campaigns/${c}/coupons`, keys: ["coupons"], poison: "coupons" },
		];
		for (let i = 0; i < ADMIN_BODIES; i++) {
			const route = pick(rand, adminRoutes);
			const poisoned = rand() < 0.5;
			const target = poisoned ? victim : { appid: scratch.appid, campaignid: scratch.campaignid };
			const body: Record<string, unknown> = {};
			for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) {
				Object.defineProperty(body, pick(rand, [...route.keys, ...PROTO_KEYS]), {
					value: hostileValue(rand, victim),
					enumerable: true,
					configurable: true,
					writable: true,
				});
			}
			if (poisoned) body[route.poison] = route.poison === "coupons" ? [{ coupon: "bad\u0000code" }] : "bad\r\nname";
			const text = rand() < 0.05 ? pick(rand, ["{", "[]", `{"x":${"[".repeat(3_000)}${"]".repeat(3_000)}}`]) : JSON.stringify(body);
			const path = `/admin/v1${route.path(target.appid, target.campaignid)}`;
			jobs.push(async () => {
				const answer = await send(`${route.method} ${path} ${text.slice(0, 300)}`, path, {
					method: route.method,
					headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
					body: text,
				});
				if (poisoned && answer.status < 400) answer.problem = "a poisoned admin body was accepted";
				return answer;
			});
		}
		for (const query of ["limit=-1", "limit=abc", "limit=1e9", "cursor=%00", "cursor=' OR 1=1", "limit=1&cursor=zzz"]) {
			jobs.push(() => send(`GET apps?${query}`, `/admin/v1/apps?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
			jobs.push(() =>
				send(`GET deliveries?${query}`, `/admin/v1/apps/${victim.appid}/deliveries?${query}`, {
					headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
				}),
			);
		}

		expect(jobs.length).toBeGreaterThanOrEqual(2_000);
		const answers = await inParallel(jobs, CONCURRENCY);
		const failures = answers.filter((a) => a.status >= 500 || a.problem);
		expect(failures.slice(0, 5).map((a) => `${a.status} ${a.problem ?? JSON.stringify(a.json)} <- ${a.what}`)).toEqual([]);
		// The fuzz reached past authentication and validation too, not only the front door.
		const statuses = new Set(answers.map((a) => a.status));
		expect([...statuses].filter((s) => s === 200 || s === 400 || s === 401 || s === 404).length).toBe(4);

		expect(await snapshot(victim)).toEqual(before);
	});
});
