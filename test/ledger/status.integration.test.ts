import { describe, expect, it } from "vitest";
import { newUserKey } from "../../src/domain/ids";
import type { SettableStatus } from "../../src/ledger/types";
import { freshLedger, grantOf } from "./support";

async function ledgerWith(status: "Approved" | "UnderReview" | "Suspicious", amount = 10) {
	const ledger = freshLedger();
	const { rewards } = await ledger.stub.grant(ledger.appid, ledger.userkey, [grantOf({ status, amount })]);
	return { ...ledger, id: rewards[0]!.rewarddtlid };
}

describe("UserLedger.changeStatuses", () => {
	const targets: SettableStatus[] = ["Approved", "UnderReview", "Suspicious", "Rejected"];
	const expected = {
		Approved: { pending: 0, approved: 10, claimed: 0, total: 10 },
		UnderReview: { pending: 10, approved: 0, claimed: 0, total: 10 },
		Suspicious: { pending: 10, approved: 0, claimed: 0, total: 10 },
		Rejected: { pending: 0, approved: 0, claimed: 0, total: 0 },
	};
	for (const from of ["Approved", "UnderReview", "Suspicious"] as const) {
		for (const to of targets) {
			it(`${from} -> ${to}: status, comment and balance follow`, async () => {
				const { stub, id } = await ledgerWith(from);
				const result = await stub.changeStatuses([{ rewarddtlid: id, status: to, message: `set ${to}` }]);
				expect(result).toMatchObject({ ok: true, rewards: [{ rewarddtlid: id, rewardstatus: to, comment: `set ${to}` }] });
				expect((await stub.getReward(id))?.rewardstatus).toBe(to);
				expect((await stub.balance({}))[0]).toMatchObject(expected[to]);
			});
		}
	}

	it("Rejected can be approved again", async () => {
		const { stub, id } = await ledgerWith("Approved");
		await stub.changeStatuses([{ rewarddtlid: id, status: "Rejected", message: null }]);
		expect(await stub.changeStatuses([{ rewarddtlid: id, status: "Approved", message: null }])).toMatchObject({ ok: true });
		expect((await stub.balance({}))[0]).toMatchObject({ approved: 10, total: 10 });
	});

	it("a Rewarded reward cannot change", async () => {
		const { stub, id } = await ledgerWith("Approved");
		expect(await stub.redeemByIds([id])).toMatchObject({ ok: true });
		for (const status of targets) {
			const result = await stub.changeStatuses([{ rewarddtlid: id, status, message: "no" }]);
			expect(result).toMatchObject({ ok: false, error: { code: "invalid_status_transition", rewarddtlid: id } });
		}
		expect(await stub.getReward(id)).toMatchObject({ rewardstatus: "Rewarded", comment: "" });
	});

	it("a partly redeemed reward cannot be Rejected but may be put under review, keeping the redeemed part claimed", async () => {
		const { stub, id } = await ledgerWith("Approved");
		expect(await stub.redeemByAmount({ amount: 4 })).toMatchObject({ ok: true, redeemed: 4 });
		expect(await stub.changeStatuses([{ rewarddtlid: id, status: "Rejected", message: null }])).toMatchObject({
			ok: false,
			error: { code: "invalid_status_transition" },
		});
		expect(await stub.changeStatuses([{ rewarddtlid: id, status: "UnderReview", message: null }])).toMatchObject({ ok: true });
		expect((await stub.balance({}))[0]).toMatchObject({ pending: 6, approved: 0, claimed: 4, total: 10 });
	});

	it("Rewarded and unknown statuses cannot be set", async () => {
		const { stub, id } = await ledgerWith("Approved");
		for (const status of ["Rewarded", "Under Review", "approved"]) {
			const result = await stub.changeStatuses([{ rewarddtlid: id, status: status as SettableStatus, message: null }]);
			expect(result).toMatchObject({ ok: false, error: { code: "invalid_status_transition" } });
		}
	});

	it("same status only updates the comment, with no status event", async () => {
		const { stub, id } = await ledgerWith("Approved");
		const result = await stub.changeStatuses([{ rewarddtlid: id, status: "Approved", message: "checked by hand" }]);
		expect(result).toMatchObject({ ok: true, rewards: [{ rewardstatus: "Approved", comment: "checked by hand", version: 2 }] });
		expect((await stub.balance({}))[0]).toMatchObject({ approved: 10, total: 10 });
		// A null message keeps the comment.
		await stub.changeStatuses([{ rewarddtlid: id, status: "Approved", message: null }]);
		expect((await stub.getReward(id))?.comment).toBe("checked by hand");
	});

	it("is all or nothing: one bad entry applies none, and names the entry", async () => {
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [grantOf(), grantOf()]);
		const [a, b] = rewards.map((r) => r.rewarddtlid) as [string, string];
		await stub.redeemByIds([b]);
		const bad = await stub.changeStatuses([
			{ rewarddtlid: a, status: "Rejected", message: "x" },
			{ rewarddtlid: b, status: "Rejected", message: "x" },
		]);
		expect(bad).toMatchObject({ ok: false, error: { code: "invalid_status_transition", rewarddtlid: b } });
		const unknown = await stub.changeStatuses([
			{ rewarddtlid: a, status: "Rejected", message: "x" },
			{ rewarddtlid: `${newUserKey()}-1`, status: "Rejected", message: "x" },
		]);
		expect(unknown).toMatchObject({ ok: false, error: { code: "reward_not_found" } });
		expect(await stub.getReward(a)).toMatchObject({ rewardstatus: "Approved", comment: "", version: 1 });
		expect((await stub.balance({}))[0]).toMatchObject({ approved: 10, claimed: 10, total: 20 });
	});

	it("validateStatusChanges answers like changeStatuses but changes nothing", async () => {
		const { stub, id } = await ledgerWith("UnderReview");
		const dry = await stub.validateStatusChanges([{ rewarddtlid: id, status: "Approved", message: "ok" }]);
		expect(dry).toMatchObject({ ok: true, rewards: [{ rewarddtlid: id, rewardstatus: "Approved" }] });
		expect(await stub.getReward(id)).toMatchObject({ rewardstatus: "UnderReview", comment: "" });
		expect(await stub.validateStatusChanges([{ rewarddtlid: "nope", status: "Approved", message: null }])).toMatchObject({
			ok: false,
			error: { code: "reward_not_found" },
		});
		expect((await stub.balance({}))[0]).toMatchObject({ pending: 10 });
	});

	it("a manual change ends the automatic approval of a hold", async () => {
		const ledger = freshLedger();
		const holdUntil = new Date(Date.now() + 60_000).toISOString();
		const { rewards } = await ledger.stub.grant(ledger.appid, ledger.userkey, [grantOf({ status: "UnderReview", holdUntil })]);
		const result = await ledger.stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "UnderReview", message: "keep" }]);
		expect(result).toMatchObject({ ok: true, rewards: [{ holdUntil: null }] });
	});
});
