import { describe, expect, it } from "vitest";
import type { LedgerProfile } from "../../src/ledger/profile";
import { freshLedger } from "./support";

/**
 * The profile a user's ledger keeps for conversions (ledger/profile.ts, issue
 * 49): a profile read from D1 is kept only under the generation the ledger
 * answered before the read, so a read that raced a change of the user is
 * dropped, never kept stale; a profile read back by a write's own batch is
 * kept unless the profile was ever forgotten; an erased user's ledger
 * answers it erased, whatever was kept.
 */

const profileOf = (userkey: string, overrides: Partial<LedgerProfile> = {}): LedgerProfile => ({
	userkey,
	email: "ann@example.com",
	name: "Ann",
	profileimage: null,
	phone: "15550001",
	paymentcustomerid: null,
	isexistinguser: false,
	campaignid: 1,
	erasedAt: null,
	userid: 1,
	useraccountid: null,
	createdAt: "2026-11-01T00:00:00.000Z",
	referrerkey: "u-referrer",
	recentReferrals: 1,
	devices: ["dev-1"],
	ips: [],
	...overrides,
});

describe("the ledger's profile", () => {
	it("a ledger without tables answers none at generation 0, and a read stores nothing", async () => {
		const { stub } = freshLedger();
		expect(await stub.profile()).toEqual({ profile: null, generation: 0 });
		expect(await stub.listRewards()).toEqual([]);
	});

	it("keeps a fill under the generation it was read at, and drops one that raced a forget", async () => {
		const { appid, userkey, stub } = freshLedger();
		const before = await stub.profile();
		// A change of the user lands (D1 written, then the ledger told) between the ledger's answer and the fill.
		expect(await stub.changeProfile(appid, userkey, { kind: "forget" })).toBe(1);
		const stale = profileOf(userkey, { phone: "old" });
		expect(await stub.changeProfile(appid, userkey, { kind: "fill", profile: stale, generation: before.generation })).toBeNull();
		expect(await stub.profile()).toEqual({ profile: null, generation: 1 });
		// A read after the change is kept.
		const fresh = profileOf(userkey, { phone: "new" });
		expect(await stub.changeProfile(appid, userkey, { kind: "fill", profile: fresh, generation: 1 })).toBe(1);
		expect(await stub.profile()).toEqual({ profile: fresh, generation: 1 });
	});

	it("keeps a profile read back by a write's batch only if the profile was never forgotten", async () => {
		const { appid, userkey, stub } = freshLedger();
		const first = profileOf(userkey);
		expect(await stub.changeProfile(appid, userkey, { kind: "registered", profile: first })).toBe(1);
		expect((await stub.profile()).profile).toEqual(first);
		// A second read-back (another friend's attribution) leaves the kept one: a change would have forgotten it first.
		expect(await stub.changeProfile(appid, userkey, { kind: "registered", profile: profileOf(userkey, { name: "x" }) })).toBeNull();
		await stub.changeProfile(appid, userkey, { kind: "forget" });
		expect(await stub.changeProfile(appid, userkey, { kind: "registered", profile: first })).toBeNull();
		expect((await stub.profile()).profile).toBeNull();
	});

	it("answers an erased user's profile erased, without the person, and drops what it kept", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.changeProfile(appid, userkey, { kind: "registered", profile: profileOf(userkey) });
		await stub.erasePerson(userkey, ["ann@example.com"]);
		expect((await stub.profile()).profile).toBeNull();
		// A fill from a D1 read made before D1's erasure still comes back erased: the ledger's own mark decides.
		const { generation } = await stub.profile();
		await stub.changeProfile(appid, userkey, { kind: "fill", profile: profileOf(userkey), generation });
		const read = (await stub.profile()).profile;
		expect(read).toMatchObject({ email: null, name: null, phone: null, devices: [], referrerkey: "u-referrer" });
		expect(read?.erasedAt).not.toBeNull();
	});
});
