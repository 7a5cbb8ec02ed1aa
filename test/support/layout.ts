import { env } from "cloudflare:workers";
import { forgetAppLayout } from "../../src/db/app-layout";
import { shardPool } from "../../src/db/shards";
import { forgetCachedApp } from "../../src/http/auth";
import { createApp } from "./api";

/**
 * Pins an app and its test twin to the "one" layout (issue 50 phase 2b-1): its projection rows in the control
 * database, as every app created before the shards. For the tests that read or write those rows in DB themselves
 * (the counters' and board's SQL, the same on a shard); a new app is sharded, and test/shards covers that layout.
 */
export async function inOneDatabase<T extends { appid: string }>(app: T): Promise<T> {
	await env.DB.prepare("UPDATE apps SET layout = 'one' WHERE appid = ? OR live_appid = ?").bind(app.appid, app.appid).run();
	for (const appid of [app.appid, `${app.appid}_test`]) {
		forgetCachedApp(appid);
		forgetAppLayout(appid);
	}
	return app;
}

/**
 * The rows `sql` selects from the projection of an app of either layout: the control database's and every shard's,
 * in that order (each database's own ORDER BY holds within its part).
 */
export async function projectionRows<Row>(sql: string, ...args: unknown[]): Promise<Row[]> {
	const pool = await shardPool(env);
	const parts = await Promise.all(
		[env.DB, ...pool.shards].map((db) =>
			db
				.prepare(sql)
				.bind(...args)
				.all<Row>(),
		),
	);
	return parts.flatMap((p) => p.results);
}

/** A new app (test/support/api.ts createApp) pinned to the "one" layout (inOneDatabase). */
export async function createOneDatabaseApp(...args: Parameters<typeof createApp>): ReturnType<typeof createApp> {
	return inOneDatabase(await createApp(...args));
}
