import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, invoicePaid, startHarness } from "./stripe-harness";
import { waitFor } from "./wait";

// Issue 31 end to end: `wrangler dev` killed (SIGKILL, no shutdown) during a
// burst of signed `invoice.paid` events, with some payouts in flight at
// Stripe, and restarted on its state (same --persist-to). The local queue
// keeps its messages in memory, so what was queued at the kill is lost, as
// a crash loses it. Every event answered 2xx must still become its
// conversion (the inbox stored it before the answer; the sweep sends it
// again), and once the scheduled jobs ran every reward is paid exactly what
// it owes, each Idempotency-Key with one amount: none is left `Approved` and
// unpaid. Events not answered are sent again, as Stripe does.

let h: Harness;

beforeAll(async () => {
	h = await startHarness("stripe-crash");
}, 300_000);

afterAll(async () => {
	await h?.stop();
});

const EVENTS = 18;
/** Referrers whose payouts Stripe holds until after the kill: paid at Stripe, the answer never read. */
const HELD = 3;

describe("a crash during a burst of Stripe events", () => {
	it("loses no event answered 2xx, and after the restart and the sweeps every reward is paid what it owes", {
		timeout: 360_000,
	}, async () => {
		const people: Awaited<ReturnType<Harness["referral"]>>[] = [];
		for (let i = 0; i < EVENTS; i += 6) {
			people.push(...(await Promise.all([0, 1, 2, 3, 4, 5].map((j) => h.referral(`crash${i + j}`)))));
		}
		// Different amounts, so a payout crossed with another customer's shows.
		const events = people.map((p, i) => invoicePaid(p.friendCustomer, 10_000 + 100 * i));
		const owed = (i: number) => -(1000 + 10 * i);
		// The first referrers' payouts are held at Stripe: in flight (`sending`) when the service dies.
		const holds = people.slice(0, HELD).map((p) => h.fake.hold(p.customer).arrived);
		for (let i = 0; i < HELD; i++) expect(await h.deliver(events[i]!)).toBe(200);
		await Promise.all(holds);

		// Then the burst, killed while it runs: some events answered, some cut off.
		let next = HELD;
		let killed = false;
		const answered = new Set<number>(Array.from({ length: HELD }, (_, i) => i));
		const refusals: number[] = [];
		const sender = async () => {
			while (!killed && next < EVENTS) {
				const i = next++;
				const status = await h.deliver(events[i]!);
				if (status === 200) answered.add(i);
				else if (status !== 0) refusals.push(status);
			}
		};
		const burst = Promise.all(Array.from({ length: 3 }, sender));
		await waitFor("a few burst events answered", async () => (answered.size >= HELD + 5 ? true : undefined), {
			timeoutMs: 60_000,
			intervalMs: 10,
		});
		killed = true;
		const restarted = h.restart();
		await burst;
		await restarted;
		// The held requests complete at Stripe now: applied there, their answers lost with the old process.
		for (const p of people.slice(0, HELD)) h.fake.release(p.customer);
		expect(refusals).toEqual([]);
		expect(answered.size).toBeGreaterThanOrEqual(HELD + 5);
		expect(answered.size, "the kill cut the burst").toBeLessThan(EVENTS);
		const restartedAt = Date.now();

		// Stripe sends again what was not answered 2xx; what was answered is never sent again.
		for (const [i, event] of events.entries()) {
			if (answered.has(i)) continue;
			await waitFor(`event ${i} accepted after the restart`, async () => ((await h.deliver(event)) === 200 ? true : undefined));
		}

		let unsettled: string[] = [];
		await h
			.until(
				"every referrer paid what the reward owes",
				async () => {
					await h.sweep();
					unsettled = people
						.map((p, i) => (h.fake.net(p.customer) === owed(i) ? "" : `${p.customer}: ${h.fake.net(p.customer)}`))
						.filter(Boolean);
					return unsettled.length === 0 ? true : undefined;
				},
				120_000,
			)
			.catch((error: Error) => {
				throw new Error(`not paid what they owe: ${unsettled.join("; ")}. ${error.message}`);
			});
		for (const [key, amounts] of h.fake.keyAmounts) expect({ key, amounts: [...amounts] }).toEqual({ key, amounts: [expect.any(Number)] });
		// No reward left Approved and unpaid: each one is Rewarded with Stripe's transaction id, in its ledger
		// (checkrewardstatus reads the ledger). A held payout's answer was lost with the old process, so its ledger
		// learns it only from the scheduled re-drive (docs/stripe.md, "Stuck payouts"), which takes a payout that
		// D1's view has shown open for STRIPE_REDRIVE_AFTER_MS (3 s here). The money loop above may end on a run
		// that came before then, so the jobs run here on each check too, as the minute's cron would. Without them
		// two fresh-clone CI runs (2026-11-27 15:55 and 16:24 UTC) saw the last held reward Approved after 45 and
		// 120 s, its money already at Stripe; with the re-drive set at 20 s to widen that window, the check failed
		// without them and passed with them (one run each, 17:08-17:15 UTC).
		const settled = () => people.map(() => ["Rewarded", "cbtxn_"]);
		const paidAt = Date.now();
		let statuses: string[][] = [];
		await h
			.until(
				"every reward Rewarded with Stripe's id in its ledger",
				async () => {
					await h.sweep();
					const answers = await Promise.all(people.map((p) => h.status(p.rewardid)));
					statuses = answers.map((s) => [s.rewardstatus, String(s.payoutid).slice(0, 6)]);
					return JSON.stringify(statuses) === JSON.stringify(settled()) ? true : undefined;
				},
				120_000,
			)
			.catch(() => undefined);
		expect(statuses).toEqual(settled());
		console.log(
			JSON.stringify({
				answeredBeforeKill: answered.size,
				events: EVENTS,
				held: HELD,
				settledAfterRestartMs: Date.now() - restartedAt,
				rewardedAfterPaidMs: Date.now() - paidAt,
			}),
		);
	});
});
