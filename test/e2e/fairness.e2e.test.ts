import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { startReceiver } from "../outbox/receiver.mjs";
import { waitFor as waitUntil } from "./wait";

// Tenant fairness in webhook delivery, against `wrangler dev` (real queue and
// consumer, the default 1.5 s webhook timeout) and real receivers on 127.0.0.1:
// one app's endpoint never answers; once its circuit breaker is open, another
// app's webhook still arrives within 5 s, and over a whole 45 s window every
// webhook of another app arrives within 2 s of its event.

let receiver: Awaited<ReturnType<typeof startReceiver>>;
let service: Awaited<ReturnType<typeof startService>>;

beforeAll(async () => {
	receiver = await startReceiver();
	service = await startService({ name: "e2e-fairness" });
});

afterAll(async () => {
	await service?.stop();
	await receiver?.close();
});

async function call(method: string, path: string, body?: unknown, token?: string) {
	const res = await fetch(`${service.base}${path}`, {
		method,
		headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	return { status: res.status, body: (await res.json()) as any };
}
const admin = (method: string, path: string, body?: unknown) => call(method, `/admin/v1${path}`, body, service.adminToken);

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000) =>
	waitUntil(what, probe, { timeoutMs, intervalMs: 100, context: () => service.logs().slice(-3000) });

async function appWithHook(key: string) {
	const app = await admin("POST", "/apps", { name: key, webhookurl: `${receiver.url}/hooks/${key}` });
	expect(app.status).toBe(201);
	expect((await admin("POST", `/apps/${app.body.appid}/campaigns`, { campaignname: "c" })).status).toBe(201);
	return app.body as { appid: string; apikey: string; privatekey: string };
}

const register = (app: { apikey: string; privatekey: string }, email: string) =>
	call("POST", "/saas/v1_0/register", { apikey: app.apikey, privatekey: app.privatekey, email });

/**
 * What a failure needs to be explained: the emails of app A that never arrived,
 * app A's deliveries not delivered (status, attempts, last error), its breaker,
 * and the service's log lines that name those events.
 */
async function whyMissing(appid: string, sentAt: Map<string, number>): Promise<string> {
	const arrived = new Set(receiver.received("isolation-steady").map((d: any) => JSON.parse(d.body).data.email as string));
	const missing = [...sentAt.keys()].filter((email) => !arrived.has(email));
	const { body } = await admin("GET", `/apps/${appid}/deliveries?limit=200`);
	const undelivered = (body.deliveries ?? []).filter((d: any) => d.status !== "delivered");
	const ids = new Set(undelivered.map((d: any) => d.eventid as string));
	const lines = service
		.logs()
		.split("\n")
		.filter((line) => [...ids].some((id) => line.includes(id)));
	return `${JSON.stringify({ missing, undelivered, webhookbreaker: body.webhookbreaker }, null, 1)}\n${lines.join("\n").slice(-6000)}`;
}

describe("one app's hanging endpoint does not hold back another app's webhooks (wrangler dev)", () => {
	it("the breaker opens on the hanging endpoint, then the other app's delivery arrives within 5 s", { timeout: 240_000 }, async () => {
		const hanging = await appWithHook("hanging");
		const healthy = await appWithHook("healthy");
		// Never answers within the webhook timeout.
		await fetch(`${receiver.url}/__mode/hanging`, { method: "POST", body: JSON.stringify({ default: { delayMs: 120_000 } }) });

		// At once, so that they mostly share a consumer batch: their timeouts then run in parallel.
		const first = await Promise.all(Array.from({ length: 6 }, (_, i) => register(hanging, `h${i}@example.org`)));
		expect(first.map((r) => r.status)).toEqual(Array(6).fill(200));
		const breaker = await waitFor("the hanging endpoint's breaker to open", async () => {
			const res = await admin("GET", `/apps/${hanging.appid}/webhook-breaker`);
			return res.body.state === "open" ? res.body : undefined;
		});
		expect(breaker).toMatchObject({ consecutivefailures: expect.any(Number), lasterror: expect.stringContaining("timed out") });
		const sentToHanging = receiver.received("hanging").length;

		// More events of the hanging app, and one of the healthy app, at the same time.
		const more = Array.from({ length: 5 }, (_, i) => register(hanging, `more${i}@example.org`));
		const started = Date.now();
		expect((await register(healthy, "ok@example.org")).status).toBe(200);
		await Promise.all(more);
		const [delivered] = await waitFor("the healthy app's webhook", async () => {
			const got = receiver.received("healthy");
			return got.length > 0 ? got : undefined;
		});
		expect(delivered!.at - started).toBeLessThan(5_000);

		// The hanging app's new events were held back, not sent, and the log says why.
		const held = await waitFor("held-back deliveries in the log", async () => {
			const { body } = await admin("GET", `/apps/${hanging.appid}/deliveries`);
			const entries = body.deliveries.filter((d: any) => d.lastattempt?.error?.startsWith("circuit open"));
			return entries.length >= 5 ? { entries, body } : undefined;
		});
		expect(held.body.webhookbreaker.state).toBe("open");
		expect(receiver.received("hanging").length).toBe(sentToHanging);
	});
});

describe("per-endpoint isolation: a hanging endpoint never delays another app's webhooks (wrangler dev)", () => {
	it("after a burst of 25 events of an app whose endpoint hangs, app A's sign-ups every 500 ms for 20 s each arrive within 2 s", {
		timeout: 240_000,
	}, async () => {
		const hanging = await appWithHook("burst-hanging");
		const steady = await appWithHook("burst-steady");
		await fetch(`${receiver.url}/__mode/burst-hanging`, { method: "POST", body: JSON.stringify({ default: { delayMs: 120_000 } }) });
		// Issue 33: the burst first, all at once, so its messages fill whole batches ahead of app A's.
		const burst = await Promise.all(Array.from({ length: 25 }, (_, i) => register(hanging, `burst${i}@example.org`)));
		expect(burst.map((r) => r.status)).toEqual(Array(25).fill(200));
		const sentAt = new Map<string, number>();
		const start = Date.now();
		const at = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, start + ms - Date.now())));
		const calls = Array.from({ length: 40 }, async (_, i) => {
			await at(i * 500);
			const email = `burst-a${i}@example.org`;
			sentAt.set(email, Date.now());
			return (await register(steady, email)).status;
		});
		expect(await Promise.all(calls)).toEqual(Array(40).fill(200));
		const deliveries = await waitFor("every webhook of app A", async () => {
			const got = receiver.received("burst-steady");
			return got.length >= sentAt.size ? got : undefined;
		}).catch(async (err) => {
			throw new Error(`${(err as Error).message.split("\n")[0]}\n${await whyMissing(steady.appid, sentAt)}`);
		});
		const latency = new Map<string, number>();
		for (const d of deliveries as { body: string; at: number }[]) {
			const email = JSON.parse(d.body).data.email as string;
			if (!latency.has(email)) latency.set(email, d.at - sentAt.get(email)!);
		}
		console.log(`burst: app A ${latency.size} webhooks, p100 ${Math.max(...latency.values())} ms`);
		expect([...latency.keys()].sort()).toEqual([...sentAt.keys()].sort());
		// Issue 33: every one of them within 2 s, named when late. The batch that meets the hanging endpoint
		// returns after the detach budget (0.5 s, src/outbox/detach.ts), not after the 1.5 s timeout.
		expect([...latency].filter(([, ms]) => ms > 2_000)).toEqual([]);
		expect(receiver.received("burst-hanging").length).toBeGreaterThanOrEqual(1);
	});

	it("every webhook of app A arrives within 2 s of its event for 45 s while app H's endpoint hangs on 20 deliveries", {
		timeout: 240_000,
	}, async () => {
		const hanging = await appWithHook("isolation-hanging");
		const steady = await appWithHook("isolation-steady");
		await fetch(`${receiver.url}/__mode/isolation-hanging`, { method: "POST", body: JSON.stringify({ default: { delayMs: 120_000 } }) });

		// A: one event a second for 45 s. H: 20 events, the first ones at once (a shared batch), the rest spread over the window.
		const WINDOW_MS = 45_000;
		const sentAt = new Map<string, number>();
		const start = Date.now();
		const at = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, start + ms - Date.now())));
		const steadyCalls = Array.from({ length: WINDOW_MS / 1000 }, async (_, i) => {
			await at(i * 1000);
			const email = `a${i}@example.org`;
			sentAt.set(email, Date.now());
			return (await register(steady, email)).status;
		});
		const hangingCalls = Array.from({ length: 20 }, async (_, i) => {
			await at(i < 5 ? 0 : (i - 4) * 2_500);
			return (await register(hanging, `h${i}@example.org`)).status;
		});
		expect(await Promise.all([...steadyCalls, ...hangingCalls])).toEqual(Array(WINDOW_MS / 1000 + 20).fill(200));

		const deliveries = await waitFor("every webhook of app A", async () => {
			const got = receiver.received("isolation-steady");
			return got.length >= sentAt.size ? got : undefined;
		}).catch(async (err) => {
			throw new Error(`${(err as Error).message.split("\n")[0]}\n${await whyMissing(steady.appid, sentAt)}`);
		});
		const latency = new Map<string, number>();
		for (const d of deliveries as { body: string; at: number }[]) {
			const email = JSON.parse(d.body).data.email as string;
			if (!latency.has(email)) latency.set(email, d.at - sentAt.get(email)!);
		}
		const worst = Math.max(...latency.values());
		console.log(
			`app A: ${latency.size} webhooks, p100 ${worst} ms; app H endpoint got ${receiver.received("isolation-hanging").length} attempts`,
		);
		expect([...latency.keys()].sort()).toEqual([...sentAt.keys()].sort());
		// Every one of them, named when late: the whole window counts, before and after H's breaker opens.
		expect([...latency].filter(([, ms]) => ms > 2_000)).toEqual([]);
		expect(worst).toBeLessThanOrEqual(2_000);
		// H's endpoint really hung on its deliveries (the test would prove nothing otherwise).
		expect(receiver.received("isolation-hanging").length).toBeGreaterThanOrEqual(5);
	});
});
