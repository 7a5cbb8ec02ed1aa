import { Hono } from "hono";
import { findTestApp } from "../db/apps";
import { shardPool } from "../db/shards";
import {
	auditTestDataErased,
	deleteTestAppRows,
	deleteTestShardRows,
	deleteTestShardUsers,
	deleteTestUsers,
	ROUND,
	testUsersRound,
} from "../db/test-data";
import { EVENT_GATE_SHARDS } from "../domain/gate-shard";
import { gateStub } from "../ledger/event-gate";
import { ledgerFor } from "../ledger/stub";
import { requireApp } from "./guard";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * DELETE /admin/v1/apps/{appid}/testdata: erases what the app's test keys
 * made (docs/test-mode.md): the test twin's users with their ledgers, then
 * its events, rewards, outbox events, clicks and stats. Live data is never
 * touched: every statement is scoped by the twin's appid, which the route
 * resolves from the live app, and a ledger refuses erasure unless it is a
 * twin's. The twin's keys and Stripe connection stay.
 *
 * Bounded: at most MAX_ROUNDS rounds (src/db/test-data.ts) per call; an
 * answer with `done: false` asks the caller to call again. Each round can run
 * twice, so a call that dies half way is finished by the next.
 */
export const testDataRoutes = new Hono<AdminEnv>();

const MAX_ROUNDS = 10;

testDataRoutes.delete("/apps/:appid/testdata", async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	const twin = await findTestApp(c.env.DB, app.appid);
	const deleted = { users: 0, rows: 0 };
	if (!twin) return c.json({ appid: app.appid, deleted, done: true });
	// A sharded twin's projection rows are in the shards (issue 50 phase 2b-1).
	const pool = twin.layout === "sharded" ? await shardPool(c.env) : null;
	for (let round = 0; round < MAX_ROUNDS; round++) {
		const users = await testUsersRound(c.env.DB, twin.appid);
		if (users.length > 0) {
			// Ledgers first: once a user's ledger is gone it can flush nothing back into D1.
			await Promise.all(users.map((u) => ledgerFor(c.env, twin.appid, u.userkey).eraseTestLedger(twin.appid, u.userkey)));
			deleted.rows += await deleteTestUsers(c.env.DB, twin.appid, users);
			if (pool)
				deleted.rows += await deleteTestShardUsers(
					pool,
					twin.appid,
					users.map((u) => u.userkey),
				);
			deleted.users += users.length;
			continue;
		}
		// The twin's event claims in every gate (ledger/event-gate.ts), up to ROUND each, with its D1 rows.
		const [rows, shardRows, ...claims] = await Promise.all([
			deleteTestAppRows(c.env.DB, twin.appid),
			pool ? deleteTestShardRows(pool, twin.appid) : 0,
			...Array.from({ length: EVENT_GATE_SHARDS }, (_, shard) => gateStub(c.env, shard).forgetApp(twin.appid, ROUND)),
		]);
		deleted.rows += rows + shardRows;
		if (rows + shardRows === 0 && claims.some((n) => n > 0)) continue;
		if (rows + shardRows === 0) {
			const audit = auditEntry(c, app.appid, {
				action: "app.delete_testdata",
				targetType: "app",
				targetId: app.appid,
				changes: { testusers: { before: deleted.users, after: 0 } },
			});
			await auditTestDataErased(c.env.DB, audit);
			return c.json({ appid: app.appid, deleted, done: true });
		}
	}
	return c.json({ appid: app.appid, deleted, done: false });
});
