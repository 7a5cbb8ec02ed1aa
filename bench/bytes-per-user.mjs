// `npm run bench:bytes` (node bench/bytes-per-user.mjs): bytes per user in
// each D1 database, read from the local SQLite files (issue 50). A fresh
// `wrangler dev` gets one app whose users are half referrers and half their
// friends, each friend registered with its referrer's code and converting
// once (a Purchase that rewards both sides: the event, two rewards, the
// stats and board counters, the reward emails); once the service is quiet
// it is stopped and every D1 file is read with SQLite's dbstat: the bytes of
// each table with its indexes, less those of the freshly migrated state,
// divided by the users. The ledgers' (Durable Object) files are summed too,
// for the whole picture. Later phases run it again to compare (the sharded
// layout: per shard and in all). Settings: BENCH_BYTES_USERS (default 2000),
// BENCH_BYTES_CONCURRENCY (default 4). Writes bench/bytes-per-user.json.
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { migratedState, startService } from "../scripts/dev-service.mjs";

const users = Number(process.env.BENCH_BYTES_USERS || 2000);
const concurrency = Number(process.env.BENCH_BYTES_CONCURRENCY || 4);
const out = new URL("./bytes-per-user.json", import.meta.url).pathname;
const log = (...args) => console.log(`[bytes ${new Date().toISOString().slice(11, 19)}]`, ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every SQLite file under `dir` (recursively), but wrangler's metadata. */
function sqliteFiles(dir) {
	return readdirSync(dir, { recursive: true })
		.map(String)
		.filter((f) => f.endsWith(".sqlite") && !f.endsWith("metadata.sqlite"))
		.map((f) => join(dir, f));
}

/** One D1 file: which database it is (the control database or shard n) and its bytes by table, indexes included. */
function readDatabase(file) {
	const db = new DatabaseSync(file);
	try {
		const tables = new Map(
			db
				.prepare("SELECT name, tbl_name FROM sqlite_master")
				.all()
				.map((r) => [r.name, r.tbl_name]),
		);
		const shard = tables.has("shard_identity") ? (db.prepare("SELECT shard FROM shard_identity").get()?.shard ?? "?") : null;
		const byTable = {};
		for (const row of db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all()) {
			const table = tables.get(row.name) ?? row.name;
			byTable[table] = (byTable[table] ?? 0) + Number(row.bytes);
		}
		const { page_size } = db.prepare("PRAGMA page_size").get();
		const { page_count } = db.prepare("PRAGMA page_count").get();
		const { freelist_count } = db.prepare("PRAGMA freelist_count").get();
		return {
			name: tables.has("users") ? "DB" : shard !== null ? `SHARD_${shard}` : file,
			usedBytes: (Number(page_count) - Number(freelist_count)) * Number(page_size),
			byTable,
		};
	} finally {
		db.close();
	}
}

/** The D1 databases of a state directory, by name. */
function d1Of(state) {
	const databases = sqliteFiles(join(state, "v3", "d1")).map((f) => readDatabase(f));
	// The control database first, then the shards in order.
	const order = (name) => (name === "DB" ? -1 : Number(name.replace("SHARD_", "")));
	return Object.fromEntries(databases.sort((a, b) => order(a.name) - order(b.name)).map((d) => [d.name, d]));
}

/** Bytes of the ledgers' SQLite files (pages in use, WAL included), and how many there are. */
function ledgersOf(state) {
	const dirs = readdirSync(join(state, "v3", "do")).filter((d) => /UserLedger/.test(d));
	let bytes = 0;
	let count = 0;
	for (const dir of dirs)
		for (const file of sqliteFiles(join(state, "v3", "do", dir))) {
			const db = new DatabaseSync(file);
			const { page_size } = db.prepare("PRAGMA page_size").get();
			const { page_count } = db.prepare("PRAGMA page_count").get();
			db.close();
			bytes += Number(page_size) * Number(page_count);
			count++;
		}
	return { bytes, count };
}

async function main() {
	const baseline = d1Of(migratedState({ ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" }));
	const service = await startService({ name: "bytes" });
	const admin = async (method, path, body) => {
		const res = await fetch(`${service.base}/admin/v1${path}`, {
			method,
			headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
			body: body && JSON.stringify(body),
		});
		const json = await res.json();
		if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
		return json;
	};
	try {
		const app = await admin("POST", "/apps", { name: "bytes per user", landingurl: "https://example.com/join" });
		await admin("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: "bytes",
			velocitythreshold: 0,
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
			],
		});
		const call = async (op, body) => {
			for (let attempt = 1; ; attempt++) {
				const res = await fetch(`${service.base}/saas/v1_0/${op}`, {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ apikey: app.apikey, privatekey: app.privatekey, ...body }),
				}).catch((error) => ({ ok: false, status: 0, json: async () => ({ error: String(error) }) }));
				const json = await res.json();
				if (res.ok) return json;
				if (attempt >= 5 || (res.status >= 400 && res.status < 500 && res.status !== 429))
					throw new Error(`${op}: ${res.status} ${JSON.stringify(json)}`);
				await sleep(200 * attempt);
			}
		};
		const pool = async (count, task) => {
			let next = 0;
			await Promise.all(
				Array.from({ length: concurrency }, async () => {
					while (next < count) await task(next++);
				}),
			);
		};
		const pairs = Math.floor(users / 2);
		const started = Date.now();
		await pool(pairs, async (i) => {
			const referrer = await call("register", {
				useraccountid: `acct-r${i}`,
				email: `referrer${i}@bytes.example.com`,
				name: `Referrer ${i}`,
			});
			const friend = await call("register", {
				useraccountid: `acct-f${i}`,
				email: `friend${i}@bytes.example.com`,
				name: `Friend ${i}`,
				referrercode: referrer.referralcode,
			});
			await call("registerconversionevent", {
				userkey: friend.userkey,
				eventname: "Purchase",
				growthhack: "SaaS_Referrals",
				transactionvalue: 100,
				customid: `order-${i}`,
			});
			if (i % 200 === 199) log(`${2 * (i + 1)} users, ${i + 1} conversions (${Math.round((Date.now() - started) / 1000)} s)`);
		});
		// The projection queue and the outbox write D1 after the answers: wait until the service is quiet.
		for (let calm = 0, before = service.cpuSeconds(); calm < 4; ) {
			await sleep(1000);
			const now = service.cpuSeconds();
			calm = now - before < 0.1 ? calm + 1 : 0;
			before = now;
		}
		await service.kill(); // keeps the state (SIGKILL after the quiet: every write is committed in the WAL)
		const after = d1Of(service.persist);
		const ledgers = ledgersOf(service.persist);
		const perDatabase = {};
		for (const [name, db] of Object.entries(after)) {
			const base = baseline[name];
			const byTable = {};
			for (const [table, bytes] of Object.entries(db.byTable)) {
				const grown = bytes - (base?.byTable[table] ?? 0);
				if (grown > 0) byTable[table] = Math.round((grown / pairs / 2) * 10) / 10;
			}
			perDatabase[name] = {
				usedBytes: db.usedBytes,
				bytesPerUser: Math.round(((db.usedBytes - (base?.usedBytes ?? 0)) / pairs / 2) * 10) / 10,
				byTable: Object.fromEntries(Object.entries(byTable).sort((a, b) => b[1] - a[1])),
			};
		}
		const result = {
			at: new Date().toISOString(),
			users: 2 * pairs,
			conversions: pairs,
			layout: `control database DB and ${Object.keys(after).length - 1} shards (phase 1: nothing routed to the shards)`,
			perDatabase,
			// A ledger's file holds at least one 4 KiB page per table and index: 36 pages of a new ledger, mostly empty.
			ledgers: {
				count: ledgers.count,
				bytesEach: Math.round(ledgers.bytes / Math.max(1, ledgers.count)),
				bytesPerUser: Math.round((ledgers.bytes / pairs / 2) * 10) / 10,
			},
		};
		writeFileSync(out, `${JSON.stringify(result, null, "\t")}\n`);
		log(`${result.users} users, ${result.conversions} conversions:`);
		for (const [name, db] of Object.entries(perDatabase)) {
			log(`  ${name.padEnd(8)} ${String(db.bytesPerUser).padStart(8)} B/user  (${Math.round(db.usedBytes / 1024)} KiB in use)`);
			for (const [table, bytes] of Object.entries(db.byTable)) log(`      ${table.padEnd(34)} ${String(bytes).padStart(8)} B/user`);
		}
		log(`  ledgers  ${String(result.ledgers.bytesPerUser).padStart(8)} B/user  (${ledgers.count} UserLedger files)`);
		log(`written to ${out}`);
	} finally {
		await service.kill();
		rmSync(service.persist, { recursive: true, force: true });
	}
}

await main();
