import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { instrumentEnv } from "../../src/instrument/d1-metrics";
import { countingLimiter, countingProjectionQueue, platformParts } from "../../src/instrument/platform-parts";
import { freshLedger, grantOf } from "../ledger/support";

/**
 * The bench's count of the platform parts a request is made of
 * (src/instrument/platform-parts.ts; bench/README.md, "Floors"): the floor of a
 * conversion is priced from these counts, so each must count what happened,
 * once. Real ledgers (they share the test's isolate, as under wrangler dev).
 */
describe("platform parts", () => {
	it("counts a ledger created by its first write once, and not again on its next write", async () => {
		const ledger = freshLedger();
		const before = platformParts();
		await ledger.stub.grant(ledger.appid, ledger.userkey, [grantOf()]);
		const first = platformParts();
		expect(first.ledgersCreated - before.ledgersCreated).toBe(1);
		expect(first.ledgerStarts - before.ledgerStarts).toBe(1);
		await ledger.stub.grant(ledger.appid, ledger.userkey, [grantOf()]);
		const second = platformParts();
		expect(second.ledgersCreated - first.ledgersCreated).toBe(0);
		expect(second.ledgerStarts - first.ledgerStarts).toBe(0);
	});

	it("counts the projection queue's sends and their messages, and passes them on", async () => {
		const sent: unknown[][] = [];
		const metrics: QueueMetrics = { backlogCount: 0, backlogBytes: 0 };
		const queue: Queue<unknown> = {
			send: async (body) => {
				sent.push([body]);
				return { metadata: { metrics } };
			},
			sendBatch: async (messages) => {
				sent.push([...messages].map((m) => m.body));
				return { metadata: { metrics } };
			},
			metrics: async () => metrics,
		};
		const counted = countingProjectionQueue(queue);
		const before = platformParts();
		await counted.sendBatch([{ body: 1 }, { body: 2 }]);
		await counted.send(3);
		const after = platformParts();
		expect(after.projectionSends - before.projectionSends).toBe(2);
		expect(after.projectionMessages - before.projectionMessages).toBe(3);
		expect(sent).toEqual([[1, 2], [3]]);
	});

	it("counts each rate limiter call once, and answers what the limiter answers", async () => {
		const keys: string[] = [];
		const limiter: RateLimit = {
			limit: async ({ key }) => {
				keys.push(key);
				return { success: key !== "over" };
			},
		};
		const counted = countingLimiter(limiter);
		const before = platformParts();
		expect(await counted.limit({ key: "app:1" })).toEqual({ success: true });
		expect(await counted.limit({ key: "over" })).toEqual({ success: false });
		const after = platformParts();
		expect(after.limiterCalls - before.limiterCalls).toBe(2);
		expect(keys).toEqual(["app:1", "over"]);
	});

	it("counts the calls of the env's real rate limiters once the bench's flag is on, and none without it", async () => {
		// Defined, not assigned: the test runner's env would take an assignment through its setter and be flagged for good.
		const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1" } });
		const before = platformParts();
		await instrumentEnv(flagged, "worker").APP_RATE_LIMITER.limit({ key: `app:parts-${crypto.randomUUID()}` });
		await instrumentEnv(flagged, "worker").CLICK_LIMITER.limit({ key: `click:parts-${crypto.randomUUID()}` });
		const counted = platformParts();
		expect(counted.limiterCalls - before.limiterCalls).toBe(2);
		await instrumentEnv(env, "worker").APP_RATE_LIMITER.limit({ key: `app:parts-${crypto.randomUUID()}` });
		expect(platformParts().limiterCalls - counted.limiterCalls).toBe(0);
	});

	it("counts every call to an event gate once the bench's flag is on, and none without it", async () => {
		const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1" } });
		const appid = `parts-${crypto.randomUUID()}`;
		const before = platformParts();
		const gate = instrumentEnv(flagged, "worker").EVENT_GATE.getByName("gate-7");
		expect(await gate.peek(appid, "c-1", false)).toBeNull();
		expect(await gate.pendingOfCampaign(appid, 1, 10)).toEqual([]);
		const counted = platformParts();
		expect(counted.gateCalls - before.gateCalls).toBe(2);
		await instrumentEnv(env, "worker").EVENT_GATE.getByName("gate-7").peek(appid, "c-1", false);
		expect(platformParts().gateCalls - counted.gateCalls).toBe(0);
	});
});
