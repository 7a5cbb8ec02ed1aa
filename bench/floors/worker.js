// The fixture of `node bench/floors.mjs` (see wrangler.toml here): each
// request does one kind of platform work, `n` times, so the bench can take
// differences between requests that differ in one thing only. Its queue
// consumer (`queue`) stands for the projection queue's.
import { DurableObject } from "cloudflare:workers";
import { NEXT_OUTBOX_ID } from "../../src/ledger/outbox-entries";
import { LEDGER_SCHEMA } from "../../src/ledger/schema-latest";

// As the ledger writes an entry since its schema step 11 (the outbox keyed by its ref, the id the largest plus one).
const OUTBOX_INSERT = `INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'webhook', ?, ?, ?, ?) RETURNING ref`;

/** `n` numbered rows (?1 = n), for one INSERT that writes n rows. */
const ROWS_CTE = "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1)";
/** A row's payload, about the size of a ledger's outbox or balance row. */
const ROW_VALUE = "x".repeat(120);

export class Floor extends DurableObject {
	/** The ledger's schema (the one script a new UserLedger runs), once per object. */
	ensureSchema() {
		if (this.ready) return;
		const sql = this.ctx.storage.sql;
		if (sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'outbox'").toArray().length === 0) {
			this.ctx.storage.transactionSync(() => sql.exec(LEDGER_SCHEMA.script));
		}
		this.ready = true;
	}

	noop() {
		return 1;
	}

	/**
	 * `n` calls from this object to object `target`, on a stub made for each call (`kept` false) or on one this object
	 * keeps across its requests (`kept` true): a ledger calling its referrer's ledger, or a gate.
	 */
	async relay(target, n, kept) {
		let stub;
		if (kept) {
			this.stubs ??= new Map();
			stub = this.stubs.get(target);
			if (!stub) {
				stub = this.env.FLOOR.getByName(target);
				this.stubs.set(target, stub);
			}
		}
		for (let i = 0; i < n; i++) await (stub ?? this.env.FLOOR.getByName(target)).noop();
		return n;
	}

	/** One outbox row, as a grant writes one (new or warm object alike). */
	write() {
		this.ensureSchema();
		const now = Date.now();
		return this.ctx.storage.sql.exec(OUTBOX_INSERT, crypto.randomUUID(), "{}", now, new Date(now).toISOString()).one().ref;
	}

	/** `n` statements on the object's SQLite (`n` = 1 and 21 give the cost of one). */
	statements(n) {
		this.ensureSchema();
		let sum = 0;
		for (let i = 0; i < n; i++) sum += this.ctx.storage.sql.exec("SELECT ? AS x", i).one().x;
		return sum;
	}

	/**
	 * `n` rows written by ONE statement in one transaction, into a table of the fixture's own (`n` = 1 and 21 give
	 * the price of a row written, the unit the service counts its ledgers' writes in: a table row or an index entry).
	 */
	rows(n) {
		this.ensureSchema();
		const sql = this.ctx.storage.sql;
		this.ctx.storage.transactionSync(() => {
			sql.exec("CREATE TABLE IF NOT EXISTS floor_rows (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
			sql.exec(`${ROWS_CTE} INSERT INTO floor_rows (v) SELECT ?2 || i FROM s`, n, ROW_VALUE);
		});
		return n;
	}

	/**
	 * One outbox row, then `messages` queue messages naming it, each its own send: a ledger's flushes through the
	 * projection queue (1 and 6 give the price of one more message, sent and consumed).
	 */
	async writeAndSend(name, ack, messages = 1) {
		const id = this.write();
		for (let i = 0; i < messages; i++) await this.env.Q.sendBatch([{ body: { name, id, ack }, contentType: "json" }]);
		return id;
	}

	/** The consumer's acknowledgement of a message (the projection's `projectionWritten`); no write, its turn is priced apart. */
	acked(id) {
		return id;
	}

	/** An alarm set by `alarmTurns` is never due (an hour ahead); were it to go off, it does nothing. */
	async alarm() {}

	/**
	 * A write, then `turns - 1` awaits, each followed by a write of the object's alarm, set and deleted in turn, as
	 * a ledger sets its flush's backstop and deletes it once the flush was acknowledged: against `writeTurns` without
	 * commits, the difference over 10 is the price of one alarm write.
	 */
	async alarmTurns(turns) {
		const id = this.write();
		for (let turn = 2; turn <= turns; turn++) {
			await scheduler.wait(1);
			if (turn % 2 === 0) await this.ctx.storage.setAlarm(Date.now() + 3_600_000);
			else await this.ctx.storage.deleteAlarm();
		}
		return id;
	}

	/**
	 * A write, then `turns - 1` awaits, each followed (`commit`) by a write transaction in its own turn, as a flush's
	 * delete after its D1 batch: with and without the transactions, the difference over 10 is the price of one
	 * transaction committed in a later turn, the awaits' own cost taken out. The later ones touch the row, the last
	 * deletes it.
	 */
	async writeTurns(turns, commit) {
		const id = this.write();
		const sql = this.ctx.storage.sql;
		for (let turn = 2; turn <= turns; turn++) {
			await scheduler.wait(1);
			if (!commit) continue;
			this.ctx.storage.transactionSync(() =>
				turn < turns
					? sql.exec("UPDATE outbox SET next_attempt_at = ? WHERE ref = ?", turn, id)
					: sql.exec("DELETE FROM outbox WHERE ref = ?", id),
			);
		}
		return turns;
	}
}

/** Queue messages sent and consumed (one isolate under wrangler dev), so the bench can wait for the consumer to be done. */
const queued = { sent: 0, consumed: 0 };

export default {
	/** The consumer: each message acknowledged, after (`ack`) a call to its object, 16 at a time as the service's consumer. */
	async queue(batch, env) {
		const acks = batch.messages.filter((m) => m.body.ack);
		for (let i = 0; i < acks.length; i += 16) {
			await Promise.all(acks.slice(i, i + 16).map((m) => env.FLOOR.getByName(m.body.name).acked(m.body.id)));
		}
		for (const message of batch.messages) message.ack();
		queued.consumed += batch.messages.length;
	},

	async fetch(request, env) {
		const url = new URL(request.url);
		const n = Number(url.searchParams.get("n") ?? 1);
		const name = url.searchParams.get("name") ?? "warm";
		switch (url.pathname) {
			case "/health":
				return new Response("ok");
			case "/limit":
				// `n` calls of the Rate Limiting binding (1 and 6 give the price of one), as limitApp makes one per operation.
				for (let i = 0; i < n; i++) await env.LIMITER.limit({ key: `app:${i}` });
				return new Response("ok");
			case "/d1":
				for (let i = 0; i < n; i++) await env.DB.prepare("SELECT ? AS x").bind(i).first();
				return new Response("ok");
			case "/d1batch": {
				// `n` statements in ONE round trip, as the service's guarded batches send them.
				const statement = env.DB.prepare("SELECT ? AS x");
				await env.DB.batch(Array.from({ length: n }, (_, i) => statement.bind(i)));
				return new Response("ok");
			}
			case "/d1rows": {
				// `n` rows written by one D1 statement (D1's meta.rows_written counts n): the price of a row written in D1.
				await env.DB.prepare("CREATE TABLE IF NOT EXISTS floor_rows (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").run();
				await env.DB.prepare(`${ROWS_CTE} INSERT INTO floor_rows (v) SELECT ?2 || i FROM s`).bind(n, ROW_VALUE).run();
				return new Response("ok");
			}
			case "/rows":
				await env.FLOOR.getByName(name).rows(n);
				return new Response("ok");
			case "/rpc": {
				const stub = env.FLOOR.getByName(name);
				for (let i = 0; i < n; i++) await stub.noop();
				return new Response("ok");
			}
			case "/relay":
				// One call to object `name`, which calls object `target` `n` times (`kept=1`: on a stub it keeps).
				await env.FLOOR.getByName(name).relay(url.searchParams.get("target") ?? "warm-1", n, url.searchParams.get("kept") === "1");
				return new Response("ok");
			case "/objects":
				// One call to each of `n` warm objects (`warm`, `warm-1`, ...): 1 and 6 give the price of a call to one
				// more object, as a conversion calls the friend's ledger and that ledger the referrer's.
				for (let i = 0; i < n; i++) await env.FLOOR.getByName(i === 0 ? "warm" : `warm-${i}`).noop();
				return new Response("ok");
			case "/write":
				await env.FLOOR.getByName(name).write();
				return new Response("ok");
			case "/writes":
				// One write to each of `n` objects named `name-1`, `name-2`, ... (new names: 1 and 6 new objects give the
				// price of one more new ledger, created with its schema and written).
				for (let i = 1; i <= n; i++) await env.FLOOR.getByName(`${name}-${i}`).write();
				return new Response("ok");
			case "/statements":
				await env.FLOOR.getByName(name).statements(n);
				return new Response("ok");
			case "/turns":
				await env.FLOOR.getByName(name).writeTurns(n, url.searchParams.get("commit") !== "0");
				return new Response("ok");
			case "/alarms":
				await env.FLOOR.getByName(name).alarmTurns(n);
				return new Response("ok");
			case "/queue":
				await env.FLOOR.getByName(name).writeAndSend(name, url.searchParams.get("ack") === "1", n);
				queued.sent += n;
				return new Response("ok");
			case "/queued":
				return Response.json(queued);
			default:
				return new Response("not found", { status: 404 });
		}
	},
};
