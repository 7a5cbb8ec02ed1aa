import { describe, expect, it } from "vitest";
import { ReferralClient, retryAfterMs } from "../src/client";
import { decodeAnswer, encodeRequest } from "../src/encoding";
import { ReferralError } from "../src/errors";

// The client's own rules, with a scripted fetch: how many attempts, which
// headers, how long it waits. The packed SDK against the real service is
// sdk.e2e.test.ts.

type Scripted = { status: number; body?: Record<string, unknown>; headers?: Record<string, string> } | "network";

function scripted(answers: Scripted[]) {
	const calls: { url: string; headers: Headers; body: any; at: number }[] = [];
	const fetch: typeof globalThis.fetch = async (input, init) => {
		calls.push({ url: String(input), headers: new Headers(init?.headers), body: JSON.parse(String(init?.body)), at: Date.now() });
		const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
		if (answer === "network") throw new TypeError("fetch failed");
		return new Response(JSON.stringify(answer.body ?? { success: answer.status === 200, message: "x" }), {
			status: answer.status,
			headers: { "content-type": "application/json", ...answer.headers },
		});
	};
	return {
		calls,
		client: new ReferralClient({ baseUrl: "http://svc.test/", apikey: "ak_1", privatekey: "pk_1", fetch, maxRetryDelayMs: 2_000 }),
	};
}

const event = { userkey: "u1", eventname: "Signup", customid: "c1", growthhack: "SaaS_Referrals" };

describe("ReferralClient", () => {
	it("retries 5xx and network errors a bounded number of times with one Idempotency-Key", async () => {
		const { calls, client } = scripted([{ status: 503 }, "network", { status: 500 }, { status: 502 }, { status: 200 }]);
		const error = await client.registerConversionEvent(event).catch((e) => e);
		expect(error).toBeInstanceOf(ReferralError);
		expect(error).toMatchObject({ status: 502, retryable: true });
		expect(calls).toHaveLength(4);
		expect(new Set(calls.map((c) => c.headers.get("idempotency-key"))).size).toBe(1);
		expect(calls[0]!.url).toBe("http://svc.test/saas/v1_0/registerconversionevent");
	});

	it("waits Retry-After, and does not wait for one longer than maxRetryDelayMs", async () => {
		const waited = scripted([{ status: 429, headers: { "retry-after": "1" } }, { status: 200 }]);
		await waited.client.registerConversionEvent(event, { idempotencyKey: "mine" });
		expect(waited.calls.map((c) => c.headers.get("idempotency-key"))).toEqual(["mine", "mine"]);
		expect(waited.calls[1]!.at - waited.calls[0]!.at).toBeGreaterThanOrEqual(1000);
		const tooLong = scripted([
			{ status: 429, body: { success: false, message: "x", errorcode: "rate_limited" }, headers: { "retry-after": "86400" } },
		]);
		await expect(tooLong.client.remindFriend({ userkey: "u1", friendemail: "a@b.c" })).rejects.toMatchObject({ errorcode: "rate_limited" });
		expect(tooLong.calls).toHaveLength(1);
	});

	it("does not retry a final error, and sends no Idempotency-Key on reads", async () => {
		const { calls, client } = scripted([{ status: 404, body: { success: false, message: "No user", errorcode: "user_not_found" } }]);
		await expect(client.getUserBalance({ userkey: "u1", campaignid: "1" })).rejects.toMatchObject({
			status: 404,
			errorcode: "user_not_found",
			retryable: false,
		});
		expect(calls).toHaveLength(1);
		expect(calls[0]!.headers.has("idempotency-key")).toBe(false);
	});

	it("reads a leaderboard: its operation's path, no Idempotency-Key, the board as answered", async () => {
		const board = { success: true, leaderboard: [{ rank: 1, userkey: "u1", displayname: "Ann L.", friendsconverted: 2, earned: 10 }] };
		const { calls, client } = scripted([{ status: 200, body: board }]);
		const answer = await client.getLeaderboard({ period: "week", limit: 5, userkey: "u1" });
		expect(answer.leaderboard[0]?.displayname).toBe("Ann L.");
		expect(calls).toHaveLength(1);
		expect(calls[0]!.url).toBe("http://svc.test/saas/v1_0/getleaderboard");
		expect(calls[0]!.headers.get("idempotency-key")).toBeNull();
		expect(calls[0]!.body).toMatchObject({ period: "week", limit: 5, userkey: "u1" });
	});

	it("retries a 409 the service marks retryable", async () => {
		const locked = { success: false, message: "locked", errorcode: "reward_locked", retryable: true };
		const { calls, client } = scripted([
			{ status: 409, body: locked },
			{ status: 200, body: { success: true, message: "ok", redeemed: 1 } },
		]);
		expect((await client.redeemRewards({ userkey: "u1", amount: "1" })).redeemed).toBe(1);
		expect(calls).toHaveLength(2);
	});

	it("encodes every text it sends but the credentials, and decodes campaign texts", async () => {
		const { calls, client } = scripted([{ status: 200 }]);
		await client.register({ name: "C++ Dev 100%", email: "a+b@x.com" });
		expect(calls[0]!.body).toEqual({ name: "C%2B%2B%20Dev%20100%25", email: "a%2Bb%40x.com", apikey: "ak_1", privatekey: "pk_1" });
		expect(encodeRequest({ rewardslist: [{ message: "a b" }] })).toEqual({ rewardslist: [{ message: "a%20b" }] });
		expect(decodeAnswer("getcampaigndata", { offertitle: "Give+%2410", socialactions: [{ sharemessage: "100%25+off" }] })).toEqual({
			offertitle: "Give $10",
			socialactions: [{ sharemessage: "100% off" }],
		});
		expect(decodeAnswer("campaignterms", { message: "Terms+%26+rules" }).message).toBe("Terms & rules");
	});

	it("reads Retry-After as seconds or as an HTTP date", () => {
		expect(retryAfterMs("10")).toBe(10_000);
		expect(retryAfterMs(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
		expect(retryAfterMs(null)).toBeNull();
		expect(retryAfterMs("soon")).toBeNull();
	});
});
