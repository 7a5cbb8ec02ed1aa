import { isTestAppid } from "../db/apps";
import { rewardEmailContext } from "../db/messages";
import { recordOutboxEvents } from "../db/outbox-events";
import { langOfTag, sendsRewardEmail } from "../domain/messages";
import type { OutboxEvent } from "../domain/outbox-event";
import { shareLinkBase } from "../domain/public-origin";
import { emailShareUrl } from "../domain/share-url";
import { brandOf } from "../outbox/branded";
import { rewardEarnedText, rewardEmail } from "../outbox/emails";
import { emailEvent, sendInBatches } from "../outbox/events";
import { NEXT_OUTBOX_ID } from "./outbox-entries";
import { erasedAt } from "./privacy";
import type { LedgerOutboxEntry, RewardRow } from "./schema";
import { projectionPayloadSchema, readLedgerJson } from "./stored-json";
import type { TxContext } from "./transaction-types";

/**
 * The reward-earned email (issue 34, docs/messages.md). The ledger decides
 * WHEN, inside the transaction that changes the reward: the moment a reward
 * becomes earned, an outbox entry naming it is written with the change
 * (queueRewardEmail). The flush decides WHAT: it reads the recipient, the
 * app and the campaign's texts from D1 in one round trip, renders the email
 * and records it as an outbox event whose id is the reward's, so a replayed
 * flush or a reward earned twice (rejected, then approved again) records
 * nothing twice: one email per reward, whatever the retries.
 */

/**
 * Earned: credited to the user (Approved, or Rewarded once redeemed or paid),
 * and for a coupon reward only once its code is on it (codes are claimed on
 * approval, coupons.ts), so `{{reward}}` can name the code. A reward under
 * review or held as suspicious sends its email when it is approved.
 */
export const isEarned = (row: Pick<RewardRow, "status" | "rewardtype" | "coupon" | "amount">): boolean =>
	(row.status === "Approved" || row.status === "Rewarded") && row.amount > 0 && (row.rewardtype !== "Coupon" || row.coupon !== null);

/** The outbox event id of a reward's email: one per reward (the D1 primary key makes a second one a no-op). */
export const rewardEmailEventId = (appid: string, userkey: string, seq: number) => `evt_${appid}_${userkey}_${seq}_email`;

/** Queues the email of a reward that becomes earned by this change (`before` null: it is being created). */
export function queueRewardEmail(ctx: TxContext, before: RewardRow | null, after: RewardRow): void {
	if (!isEarned(after) || (before !== null && isEarned(before))) return;
	ctx.sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'email', ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		`email:${after.seq}`,
		JSON.stringify({ seq: after.seq }),
		ctx.nowMs,
		new Date(ctx.nowMs).toISOString(),
	);
}

/** What the email pass needs from its ledger (a FlushHost, outbox.ts). */
export interface EmailHost {
	sql: SqlStorage;
	transactionSync<T>(fn: () => T): T;
	env: Env;
	appid: string;
	userkey: string;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 500);

/**
 * Renders and records the emails of `entries` (ONE D1 read, ONE D1 batch),
 * removes the entries, then hands the events to the queue (a failed send is
 * sent again by the outbox sweep: the events are recorded, not marked
 * enqueued). Nothing is sent for an erased user, a user without an email, or
 * a campaign whose setting says no. Returns the entries done.
 */
export async function sendRewardEmails(
	host: EmailHost,
	entries: LedgerOutboxEntry[],
	postpone: (entries: LedgerOutboxEntry[], error: unknown) => void,
): Promise<number> {
	if (entries.length === 0) return 0;
	const rewards = entries.flatMap((entry) => {
		const { seq } = readLedgerJson("outbox", "payload", entry.payload, projectionPayloadSchema);
		const row = host.sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = ?", seq).toArray()[0];
		return row ? [row] : [];
	});
	let events: OutboxEvent[] = [];
	// An erased user gets no email (its ledger knows first): the entries go without a D1 read.
	if (erasedAt(host.sql) === null && rewards.length > 0) {
		try {
			events = await renderEmails(host, rewards);
			await recordOutboxEvents(host.env.DB, events);
		} catch (error) {
			console.warn("ledger outbox: reward email not recorded", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
			postpone(entries, error);
			return 0;
		}
	}
	host.transactionSync(() => {
		for (const entry of entries) host.sql.exec("DELETE FROM outbox WHERE id = ? AND ref = ?", entry.id, entry.ref);
	});
	if (events.length > 0) {
		const { error } = await sendInBatches(host.env, events);
		if (error)
			console.warn("ledger outbox: reward email enqueue failed (the sweep sends it)", { appid: host.appid, error: errorText(error) });
	}
	return entries.length;
}

async function renderEmails(host: EmailHost, rewards: RewardRow[]): Promise<OutboxEvent[]> {
	const campaignids = [...new Set(rewards.map((r) => r.campaignid))];
	const context = await rewardEmailContext(host.env.DB, host.appid, host.userkey, campaignids);
	const { user, app } = context;
	if (!user?.email || user.erased || !app) return [];
	const livemode = !isTestAppid(host.appid);
	const brand = brandOf(app, host.env);
	// The configured base (SHARE_BASE_URL, else PUBLIC_ORIGIN); without one, no {{sharelink}} (its line is left out).
	const shareurl = emailShareUrl(user.referralcode, user.customdomain, shareLinkBase(host.env));
	return rewards.flatMap((row) => {
		const campaign = context.campaigns.get(row.campaignid);
		if (!campaign || !sendsRewardEmail(campaign.rewardemail, app.emailsender)) return [];
		const payload = rewardEmail({
			to: user.email ?? "",
			toName: user.name,
			campaign,
			reward: rewardEarnedText(row),
			eventname: row.eventname,
			friendName: row.usertype === "Referrer" ? row.friend_name : null,
			shareurl,
			referralcode: user.referralcode,
			// The language the product last gave for the user (invokeoutreach, remindfriend); else English.
			lang: langOfTag(user.language) ?? "en",
			templates: campaign.templates,
			brand,
		});
		const event = emailEvent(host.appid, "email.reward", payload, livemode);
		return [{ ...event, eventid: rewardEmailEventId(host.appid, host.userkey, row.seq) }];
	});
}
