/**
 * What a read needs of D1: the database itself or a session of it.
 *
 * Read paths (getuserbalance, getfriendsandrewards) read through a D1 session
 * (`withSession("first-unconstrained")`): deployed with read replication,
 * their first query goes to the nearest replica instead of the primary.
 * Write paths keep using `env.DB` (the primary). A replica may lag the
 * primary by a little; a read that finds no user there asks the primary once
 * more before it answers user_not_found, so a user registered a moment ago is
 * found (docs/scaling.md).
 */
export type D1Reader = Pick<D1Database, "prepare" | "batch">;

/** A read session on the nearest replica (or the database itself where sessions are not available). */
export function readSession(db: D1Database): D1Reader {
	return typeof db.withSession === "function" ? db.withSession("first-unconstrained") : db;
}
