import { z } from "zod";
import type { OwnerStore } from "./leaderboard";
import { type ShardedEnv, shardFor } from "./shards";

/**
 * Where an app's projection rows live (issue 50 phase 2b-1, migration 0049,
 * docs/scaling.md "Built in phase 2b"): "one", the control database DB, as
 * every app created before the shards; "sharded", the shard of each row's
 * owner (migrations-shard/0002). A new app is created sharded; an existing
 * one stays "one" until the upgrade moves it.
 */
export type Layout = "one" | "sharded";

export const layoutSchema = z.enum(["one", "sharded"]);

const LAYOUT_TTL_MS = 30_000;
const layouts = new Map<string, { layout: Layout; until: number }>();

/**
 * The app's layout for the projection consumer, kept 30 s per isolate (as the
 * app's time zone, db/leaderboard.ts). A layout changes only in the upgrade,
 * which waits out twice this before it moves an app's rows (docs/scaling.md,
 * "Upgrade from one database"). An app gone since reads "one".
 */
export async function appLayout(db: D1Database, appid: string): Promise<Layout> {
	const cached = layouts.get(appid);
	if (cached && cached.until > Date.now()) return cached.layout;
	const row = await db.prepare("SELECT layout FROM apps WHERE appid = ?").bind(appid).first<{ layout: string }>();
	const layout = layoutSchema.catch("one").parse(row?.layout);
	layouts.set(appid, { layout, until: Date.now() + LAYOUT_TTL_MS });
	return layout;
}

/**
 * Where a ledger's reward rows go (its projection, the stats and board counters they move): the control database
 * for an app in the "one" layout, else the shard of the ledger's owner, with the board's erased guard of that
 * database (db/leaderboard.ts, OwnerStore). For the ledger's direct flush (ledger/outbox.ts), which the admin's
 * status change, an erasure and the tests use; the projection queue's consumer groups a batch by shard itself.
 */
export async function rowsTargetOf(
	env: ShardedEnv,
	appid: string,
	userkey: string,
): Promise<{ db: D1Database; owners: OwnerStore; elsewhere: boolean }> {
	if ((await appLayout(env.DB, appid)) === "one") return { db: env.DB, owners: "one", elsewhere: false };
	return { db: await shardFor(env, appid, userkey), owners: "shard", elsewhere: true };
}

/** Forgets the isolate's copy of the app's layout (the upgrade's flip, tests): the next read asks D1. */
export function forgetAppLayout(appid: string): void {
	layouts.delete(appid);
}
