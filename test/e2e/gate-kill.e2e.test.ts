import { afterAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { waitFor } from "./wait";

// Issue 49: an event's (app, customid) claim and frozen decision live in its
// EventGate object, written before the ledgers grant it. `wrangler dev` is
// killed (SIGKILL to its whole process group: no shutdown) while conversions
// are in flight, so some events are claimed in their gates and not (fully)
// granted: half done. Restarted on the same state, the client repeats every
// call: a half-done event must be completed exactly once by its repeat (it
// answers `duplicate` with the rewards it was missing), and the money must be
// exact: each event paid once to each side, no more.
//
// Which calls the kill leaves half done is timing: the test kills up to 24
// times, on fresh conversions each round, until a repeat has completed at least
// one half-done event, and checks the money after every round. (Three rounds
// were too few: a fresh-clone CI run at 12:33 UTC cut 8 calls in each of three
// rounds and none of them half done. Eight were too few once the gate's claim
// became one transaction of 3 statements: a fresh-clone run at 16:10 UTC cut
// 4-8 calls in each of eight rounds and none half done, the money exact each
// time. A round takes about 7 s, and the rounds stop at the first completion.
// The lasting fix is a half-done event made on purpose, not by timing.)

type Service = Awaited<ReturnType<typeof startService>>;
const services: Service[] = [];

afterAll(async () => {
	for (const s of services.slice(1)) await s.stop();
	await services[0]?.stop(); // removes the state all used
});

async function call(base: string, path: string, body: unknown, token?: string, method = "POST") {
	const res = await fetch(`${base}${path}`, {
		method,
		headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
		body: body === undefined ? undefined : JSON.stringify(body),
		signal: AbortSignal.timeout(60_000),
	});
	return { status: res.status, body: await res.json() };
}

const FRIENDS = 8;
const PER_ROUND = 120;
const REFERRER_REWARD = 10;
const FRIEND_REWARD = 5;
const ROUNDS = 24;

describe("an event half done before a kill (issue 49: the event gate)", () => {
	it("is completed exactly once by its repeat after the restart", { timeout: 600_000 }, async () => {
		let service = await startService({ name: "e2e-gate-kill" });
		services.push(service);
		const admin = (method: string, path: string, body?: unknown) =>
			call(service.base, `/admin/v1${path}`, body, service.adminToken, method);
		const app = (await admin("POST", "/apps", { name: "Gate kill shop" })).body;
		const campaign = await admin("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: "Purchases",
			rewardtype: 3,
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: REFERRER_REWARD, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: FRIEND_REWARD, rewardunit: "USD" },
			],
		});
		expect(campaign.status).toBe(201);
		const campaignid = String(campaign.body.campaignid);
		const auth = { apikey: app.apikey, privatekey: app.privatekey };
		const api = (op: string, body: object) => call(service.base, `/saas/v1_0/${op}`, { ...auth, ...body });
		const referrer = (await api("register", { email: "gate-ref@example.org" })).body;
		const friends: string[] = [];
		for (let i = 0; i < FRIENDS; i++) {
			friends.push((await api("register", { email: `gate-fr${i}@example.org`, referrercode: referrer.referralcode })).body.userkey);
		}
		const event = (i: number) => ({
			userkey: friends[i % FRIENDS],
			eventname: "Purchase",
			customid: `gate-${i}`,
			growthhack: "SaaS_Referrals",
			transactionvalue: 100,
		});
		const totalOf = async (userkey: string) => {
			const res = await api("getuserbalance", { userkey, campaignid });
			expect(res.status).toBe(200);
			return res.body.userbalance.reduce((sum: number, b: { total: number | string }) => sum + Number(b.total), 0);
		};

		let sent = 0;
		let completedOnRepeat = 0;
		for (let round = 0; round < ROUNDS && completedOnRepeat === 0; round++) {
			// Conversions 8 at a time, each with its own customid, until the kill.
			const from = sent;
			let next = from;
			let killed = false;
			const answered = new Set<number>();
			const worker = async () => {
				while (!killed && next < from + PER_ROUND) {
					const i = next++;
					try {
						const res = await api("registerconversionevent", event(i));
						if (res.status === 200) answered.add(i);
					} catch {
						// The kill: no answer; the client repeats it after the restart.
					}
				}
			};
			const traffic = Promise.all(Array.from({ length: 8 }, worker));
			const started = Date.now();
			await waitFor("a few answers before the kill", async () => (Date.now() - started >= 800 && answered.size >= 5) || undefined, {
				timeoutMs: 60_000,
				intervalMs: 10,
			});
			killed = true;
			await service.kill();
			await traffic;
			sent = next;
			expect(answered.size, "calls cut off by the kill").toBeLessThan(sent - from);

			service = await startService({ name: "e2e-gate-kill", persistTo: service.persist });
			services.push(service);
			// Every call of the round repeated, once: a half-done one completes, a done one is a plain duplicate.
			const repeats = await Promise.all(
				Array.from({ length: sent - from }, async (_, k) => ({ i: from + k, res: await api("registerconversionevent", event(from + k)) })),
			);
			for (const { i, res } of repeats) {
				expect(res.status, `${i}: ${JSON.stringify(res.body)}`).toBe(200);
				if (answered.has(i)) expect(res.body, `answered ${i}`).toMatchObject({ duplicate: true, rewardscreated: 0 });
				if (res.body.duplicate && res.body.rewardscreated > 0) completedOnRepeat++;
			}
			// A second repeat of everything changes nothing.
			for (let i = from; i < sent; i++)
				expect((await api("registerconversionevent", event(i))).body).toMatchObject({ duplicate: true, rewardscreated: 0 });
			// Money: each event paid once to each side.
			expect(await totalOf(referrer.userkey)).toBe(sent * REFERRER_REWARD);
			for (const [f, userkey] of friends.entries()) {
				const events = Array.from({ length: sent }, (_, i) => i).filter((i) => i % FRIENDS === f).length;
				expect(await totalOf(userkey)).toBe(events * FRIEND_REWARD);
			}
			console.log(JSON.stringify({ round, sent: sent - from, answeredBeforeKill: answered.size, completedOnRepeat }));
		}
		expect(completedOnRepeat, "half-done events completed by their repeat").toBeGreaterThan(0);
	});
});
