import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { freshLedger, grantOf } from "./support";

/** Polls `read` until it answers something other than null (bounded, never a fixed sleep). */
async function eventually<T>(read: () => Promise<T | null>, tries = 100): Promise<T | null> {
	for (let i = 0; i < tries; i++) {
		const value = await read();
		if (value !== null) return value;
		await new Promise((r) => setTimeout(r, 50));
	}
	return null;
}

describe("UserLedger identity", () => {
	it("knows who it is from its name before any grant", async () => {
		const { appid, userkey, stub } = freshLedger();
		const identity = await runInDurableObject(stub, (ledger) => (ledger as unknown as { identity: unknown }).identity);
		expect(identity).toEqual({ appid, userkey });
	});

	it("an alarm (a flush) before the first grant does not leave later flushes stuck", async () => {
		const { appid, userkey, stub } = freshLedger();
		// Old code: the flush ran before the ledger knew its identity, finished synchronously, and its settled
		// promise stayed in `flushing`, so every later flush returned it and delivered nothing.
		await runInDurableObject(stub, (ledger) => ledger.alarm());
		const { rewards } = await stub.grant(appid, userkey, [grantOf()]);
		const id = rewards[0]!.rewarddtlid;
		const projected = await eventually(() => env.DB.prepare("SELECT version FROM rewards WHERE rewarddtlid = ?").bind(id).first());
		expect(projected).toEqual({ version: 1 });
		expect(await stub.flush()).toMatchObject({ pending: 0 });
	});
});
