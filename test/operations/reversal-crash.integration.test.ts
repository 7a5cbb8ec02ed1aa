import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { findApp } from "../../src/db/apps";
import type { OperationContext } from "../../src/http/operation";
import { ledgerFor } from "../../src/ledger/stub";
import { reverseconversionevent } from "../../src/operations/reversal";
import { purchaseReferral } from "./reversal-support";

/**
 * conversion.reversed is written in one transaction with the refund it
 * reports (issue 20 item 9): the Worker that decided the refund dies before
 * any ledger hears its commit; the ledgers apply it at the end of their
 * lease, and the webhook already exists.
 */

/** The Worker's env, except that every ledger commit is lost on the way (the Worker died after the decision). */
function dyingAfterDecision(): Env {
	const namespace = {
		getByName(name: string) {
			const stub = env.USER_LEDGER.getByName(name);
			return new Proxy(stub, {
				get(target, property) {
					if (property === "commitTransaction") return () => Promise.reject(new Error("the Worker died"));
					// RPC stubs answer every property with a method: call through, never bind.
					return (...args: unknown[]) => (target as unknown as Record<string | symbol, (...a: unknown[]) => unknown>)[property]!(...args);
				},
			});
		},
	};
	return { ...env, USER_LEDGER: namespace } as unknown as Env;
}

describe("a refund whose Worker dies after the decision", () => {
	it("is applied by the ledgers at lease end, and its conversion.reversed exists exactly once", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(200);
		const app = (await findApp(env.DB, ctx.appid))!;
		const context: OperationContext = { env: dyingAfterDecision(), app, origin: "http://x", waitUntil: () => {} };
		const input = reverseconversionevent.schema.parse({ customid, reason: "refunded" });
		const answer = await reverseconversionevent.handle(context, input);
		expect(answer.message).toMatch(/completes in a moment/);

		const reversed = () =>
			env.DB.prepare("SELECT payload FROM outbox_events WHERE appid = ? AND type = 'conversion.reversed'")
				.bind(ctx.appid)
				.all<{ payload: string }>();
		const recorded = (await reversed()).results;
		expect(recorded).toHaveLength(1);
		expect(JSON.parse(recorded[0]!.payload)).toMatchObject({ customid, full: true, refunded: 200, reason: "refunded" });
		expect(JSON.parse(recorded[0]!.payload).rewards).toHaveLength(3);

		// The leases end: each ledger reads the stored decision (commit) and applies the refund.
		for (const userkey of [ctx.referrer.userkey, ctx.friend.userkey]) {
			const stub = ledgerFor(env, ctx.appid, userkey);
			await runInDurableObject(stub, (_l, state) => {
				state.storage.sql.exec("UPDATE ledger_transactions SET lease_until = 0 WHERE state = 'prepared'");
			});
			await runDurableObjectAlarm(stub);
		}
		expect(await ctx.balance(ctx.referrer.userkey)).toMatchObject({ total: 0, approved: 0 });
		expect(await ctx.balance(ctx.friend.userkey)).toMatchObject({ total: 0, approved: 0 });
		// A repeat of the call finds it applied and records nothing twice.
		expect((await ctx.reverse({ customid })).body.duplicate).toBe(true);
		expect((await reversed()).results).toHaveLength(1);
	});
});
