import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type StripeEventMessage, stripeObjectSchema } from "../../src/integrations/stripe/events";
import { runStripeEvent } from "../../src/integrations/stripe/handle";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";

/**
 * Ledger schema step 17 (issue 49): no index leads with an event's customid,
 * so the Worker names the event's user (every reward of the event names it
 * as its friend) when it asks a ledger for the event's rewards, and the
 * ledger seeks them by rule, friend and event. A dispute opened, then lost
 * (a full refund through reversal-work.ts, and the holds released), reaches
 * the referrer's ledger with the user: no ledger statement on the way reads
 * rewards by customid alone (the fallback kept for requests from before the
 * step scans the ledger's rewards).
 */

const RECEIVER = env.WEBHOOK_RECEIVER_URL;
const uid = () => crypto.randomUUID().replaceAll("-", "").slice(0, 12);

/** Every ledger statement run while `fn` runs (the ledgers run in this isolate). */
async function ledgerStatements(fn: () => Promise<void>): Promise<string[]> {
	const seen: string[] = [];
	const proto = await runInDurableObject(ledgerFor(env, "probe", "event-user"), (_l, state) => Object.getPrototypeOf(state.storage.sql));
	const holder = proto as { exec: (...args: unknown[]) => unknown };
	const original = holder.exec;
	holder.exec = function (this: unknown, ...args: unknown[]) {
		seen.push(String(args[0]).replace(/\s+/g, " "));
		return original.apply(this, args);
	};
	try {
		await fn();
	} finally {
		holder.exec = original;
	}
	return seen;
}

describe("a dispute's and its refund's ledger reads name the event's user", () => {
	it("held, then lost: the referrer's reward is held and reversed, sought by the friend, never by customid alone", async () => {
		const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "USD" }] });
		const stripe = { secretkey: "sk_test_evuser0000", webhooksecret: "whsec_evuserTestSecret0", apiurl: `${RECEIVER}/stripe` };
		expect((await admin("PATCH", `/apps/${app.appid}`, { stripe })).status).toBe(200);
		const referrer = (await app.api("register", { email: `ref.${uid()}@example.com` })).body as { userkey: string; referralcode: string };
		const customer = `cus_${uid()}`;
		const friend = (
			await app.api("register", { email: `fr.${uid()}@example.com`, referrercode: referrer.referralcode, paymentcustomerid: customer })
		).body as { userkey: string };
		const intent = `pi_${uid()}`;
		const run = async (type: string, object: Record<string, unknown>) => {
			const work: StripeEventMessage = { appid: app.appid, eventid: `evt_${uid()}`, type, object: stripeObjectSchema.parse(object) };
			expect(await runStripeEvent(env, work, () => undefined)).toBe("ack");
		};
		const session = {
			id: `cs_${uid()}`,
			object: "checkout.session",
			customer,
			customer_details: { email: "typed@example.com" },
			amount_total: 5000,
			currency: "usd",
			payment_status: "paid",
			payment_intent: intent,
		};
		await run("checkout.session.completed", session);
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		const [reward] = await ledger.listRewards();
		expect(reward).toMatchObject({ friendUserkey: friend.userkey, rewardstatus: "Approved", reward: "10" });

		const dispute = {
			id: `dp_${uid()}`,
			object: "dispute",
			charge: `ch_${uid()}`,
			payment_intent: intent,
			customer,
			amount: 5000,
			currency: "usd",
		};
		const opened = await ledgerStatements(() => run("charge.dispute.created", { ...dispute, status: "needs_response" }));
		expect((await ledger.listRewards())[0]).toMatchObject({ rewardstatus: "UnderReview" });
		const lost = await ledgerStatements(() => run("charge.dispute.closed", { ...dispute, status: "lost" }));
		expect((await ledger.listRewards())[0]).toMatchObject({ rewardstatus: "Rejected", reward: "0" });

		for (const statements of [opened, lost]) {
			// The event's rewards, sought by rule, friend and event (ledger/by-friend.ts eventRewards) ...
			expect(statements.some((s) => s.includes("n.friend_userkey = ?1 AND n.customid = ?2"))).toBe(true);
			// ... and never read by customid alone.
			expect(statements.filter((s) => /FROM rewards WHERE customid = \?/.test(s))).toEqual([]);
		}
	});
});
