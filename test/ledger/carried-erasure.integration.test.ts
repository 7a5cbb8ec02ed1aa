import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { recordsPart } from "../../src/ledger/carried-records";
import { queueProjection } from "../../src/ledger/outbox";
import { erasePersonInLedger } from "../../src/ledger/privacy";
import type { RewardRow } from "../../src/ledger/schema";
import { webhookEvent } from "../../src/outbox/events";
import { freshLedger, grantOf } from "./support";

/**
 * A conversion's referrer's records kept in its friend's projection entry
 * (issue 49, ledger/carried-records.ts): an erasure of the friend redacts
 * the `conversion.recorded` event waiting there, as before, and leaves the
 * referrer's projected rows as they are, as the referrer's own entry would
 * have sent them (its rows hold no personal field; the referrer's ledger
 * clears its copied fields itself).
 */
describe("the referrer's records riding in the friend's projection entry, at an erasure", () => {
	it("the event is redacted, the referrer's carried rows are not", async () => {
		const friend = freshLedger();
		const referrer = freshLedger(friend.appid);
		const email = "carried-erased@example.com";
		// The referrer's reward as its grant hands it back (its friend_userkey happens to be the friend's email).
		const theirs = await referrer.stub.grant(friend.appid, referrer.userkey, [
			grantOf({ friend: { userkey: email, email, name: "Ann", profileimage: null } }),
		]);
		const row = await runInDurableObject(referrer.stub, (_l, state) => state.storage.sql.exec<RewardRow>("SELECT * FROM rewards").one());
		expect(theirs.rewards).toHaveLength(1);
		await friend.stub.grant(friend.appid, friend.userkey, [grantOf({ usertype: "Friend" })]);
		const payloads = await runInDurableObject(friend.stub, async (_l, state) => {
			const sql = state.storage.sql;
			const part = recordsPart(friend.appid, referrer.userkey, [row], Date.now());
			const event = webhookEvent(friend.appid, "conversion.recorded", { userkey: friend.userkey, email }, "evt_carried_erasure");
			queueProjection(sql, 99, 1, Date.now(), event, part);
			const read = () => JSON.parse(sql.exec<{ payload: string }>("SELECT payload FROM outbox WHERE ref = 'projection:99'").one().payload);
			const before = read();
			erasePersonInLedger(sql, friend.userkey, [email], { at: new Date().toISOString() });
			return { before, after: read(), part };
		});
		expect(payloads.before.carried).toEqual(payloads.part);
		expect(payloads.after.event.payload.email).toBe("");
		expect(payloads.after.carried).toEqual(payloads.part);
		expect(payloads.after.carried.rewards[0].row.friend_userkey).toBe(email);
	});
});
