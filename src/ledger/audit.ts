import { type AuditChanges, type AuditEntry, type LedgerAudit, newAuditEntryId } from "../db/audit";
import { rewardId } from "../domain/ledger-ids";
import { NEXT_OUTBOX_ID } from "./outbox-entries";
import { toLedgerReward } from "./rows";
import type { RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";
import type { LedgerReward, Redemption } from "./types";

/**
 * Audit entries of a ledger's money decisions (status changes, reversals,
 * redemptions; docs/operators.md). The entry is an outbox entry written in
 * the same storage transaction as the change, so the change never exists
 * without it; the flush writes it into D1's audit_log (outbox.ts) under its
 * `entryid`, so a replayed flush adds nothing.
 */

export type { LedgerAudit };

/** The audited fields of rewards, by rewarddtlid, before a change. */
export function rewardsBefore(tx: TxContext, seqs: number[]): Map<string, LedgerReward> {
	if (seqs.length === 0) return new Map();
	const rows = tx.sql.exec<RewardRow>(`SELECT * FROM rewards WHERE seq IN (${seqs.map(() => "?").join(", ")})`, ...seqs).toArray();
	return new Map(rows.map((row) => [rewardId(tx.userkey, row.seq), toLedgerReward(tx.userkey, row)]));
}

const AUDITED = ["rewardstatus", "comment", "reward", "redeemed"] as const;

/** The audited fields that differ between two states of a reward. */
export function rewardChanges(before: LedgerReward | undefined, after: LedgerReward): AuditChanges {
	const changes: AuditChanges = {};
	for (const field of AUDITED) {
		const old = before?.[field] ?? null;
		if (old !== after[field]) changes[field] = { before: old, after: after[field] };
	}
	return changes;
}

/** Queues one entry per reward that changed: `${entryid}:${rewarddtlid}`, so retries and other ledgers never collide. */
export function queueRewardAudits(
	tx: TxContext,
	audit: LedgerAudit,
	action: string,
	before: Map<string, LedgerReward>,
	after: LedgerReward[],
): void {
	for (const reward of after) {
		const changes = rewardChanges(before.get(reward.rewarddtlid), reward);
		if (Object.keys(changes).length === 0) continue;
		queueAudit(tx, {
			entryid: `${audit.entryid}:${reward.rewarddtlid}`,
			appid: tx.appid,
			at: new Date(tx.nowMs).toISOString(),
			actor: audit.actor,
			action,
			targetType: "reward",
			targetId: reward.rewarddtlid,
			changes,
		});
	}
}

export function queueAudit(tx: TxContext, entry: AuditEntry): void {
	tx.sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'audit', ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		`audit:${entry.entryid}`,
		JSON.stringify(entry),
		tx.nowMs,
		new Date(tx.nowMs).toISOString(),
	);
}

/**
 * One entry per redemption, on the user: the amount and the rewards it used.
 * Under an Idempotency-Key its id derives from the key, so a replayed request
 * (answered from the key's record) adds no second entry.
 */
export function auditRedemption(
	tx: TxContext,
	audit: LedgerAudit | undefined,
	idempotencyKey: string | undefined,
	redemption: Redemption,
): Redemption {
	if (!audit || redemption.redeemed === 0) return redemption;
	queueAudit(tx, {
		entryid: idempotencyKey ? `redeem:${tx.userkey}:${idempotencyKey}` : audit.entryid,
		appid: tx.appid,
		at: new Date(tx.nowMs).toISOString(),
		actor: audit.actor,
		action: "balance.redeem",
		targetType: "user",
		targetId: tx.userkey,
		changes: {
			redeemed: { before: null, after: redemption.redeemed },
			rewards: { before: null, after: redemption.rewards.map((r) => r.rewarddtlid) },
		},
	});
	return redemption;
}

/** The audit of a public API call: its actor is the app key (a back end, whose address says nothing of a person). */
export const appKeyAudit = (apikey: string): LedgerAudit => ({
	entryid: newAuditEntryId(),
	actor: { type: "appkey", id: apikey, name: apikey, iphash: null },
});
