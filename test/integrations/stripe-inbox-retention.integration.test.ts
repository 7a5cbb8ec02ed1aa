import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { purgeDoneStripeEvents } from "../../src/cleanup";
import { finishInboxEvent, INBOX_DONE_RETENTION_DAYS, storeInboxEvent } from "../../src/db/stripe-inbox";

/**
 * Stripe's events once done (db/stripe-inbox.ts, issue 47's review): the
 * fields kept for the mapping, which may hold the email a payer typed at
 * checkout, are emptied when the event is done, since nothing reads a done
 * event's fields and no erasure reaches them; and done events go after
 * INBOX_DONE_RETENTION_DAYS (the daily job), while a redelivery within that
 * time is still refused as done.
 */

const DAY = 86_400_000;
const APP = "app_inbox_retention";

const event = (eventid: string) => ({
	appid: APP,
	eventid,
	type: "checkout.session.completed",
	object: JSON.stringify({ customer_email: "typed.by.payer@example.com", customer: "cus_typed" }),
});

async function row(eventid: string) {
	return env.DB.prepare("SELECT object, done_at FROM stripe_inbox WHERE appid = ? AND eventid = ?").bind(APP, eventid).first<{
		object: string;
		done_at: number | null;
	}>();
}

describe("the Stripe inbox's done events", () => {
	it("keep nothing of what the payer typed once done, and still refuse a redelivery", async () => {
		const now = Date.now();
		expect(await storeInboxEvent(env.DB, event("evt_typed_1"), now)).toBe(true);
		expect((await row("evt_typed_1"))?.object).toContain("typed.by.payer@example.com");
		await finishInboxEvent(env.DB, APP, "evt_typed_1", "converted", now);
		expect(await row("evt_typed_1")).toEqual({ object: "{}", done_at: now });
		// Stripe delivers it again: done, so its work is not run again.
		expect(await storeInboxEvent(env.DB, event("evt_typed_1"), now + 1_000)).toBe(false);
	});

	it("go after their retention, oldest first, and only done ones", async () => {
		const now = Date.now();
		const at = (days: number) => now - days * DAY;
		for (const [eventid, receivedDaysAgo, doneDaysAgo] of [
			["evt_old_done", 40, 40],
			["evt_edge_done", 36, INBOX_DONE_RETENTION_DAYS + 0.5],
			["evt_recent_done", 10, 10],
			["evt_old_open", 40, null],
		] as const) {
			await storeInboxEvent(env.DB, event(eventid), at(receivedDaysAgo));
			if (doneDaysAgo !== null) await finishInboxEvent(env.DB, APP, eventid, "converted", at(doneDaysAgo));
		}
		const result = await purgeDoneStripeEvents(env, createScheduledController({ cron: "17 3 * * *", scheduledTime: now }));
		expect(result.behind).toBe(false);
		expect(await row("evt_old_done")).toBeNull();
		expect(await row("evt_edge_done")).toBeNull();
		expect(await row("evt_recent_done")).toEqual({ object: "{}", done_at: at(10) });
		// Not done: the sweep still sends it, whatever its age.
		expect((await row("evt_old_open"))?.done_at).toBeNull();
	});
});
