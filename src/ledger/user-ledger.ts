import { DurableObject } from "cloudflare:workers";

/**
 * One per (app, user): the single writer of that user's rewards, redemptions
 * and balance. Every method checks and writes inside one synchronous storage
 * transaction, so concurrent calls can never interleave between a check and
 * the write that depends on it.
 */
export class UserLedger extends DurableObject<Env> {
	private readonly sql: SqlStorage;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.sql = ctx.storage.sql;
		this.sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
	}
}
