import { DurableObject } from "cloudflare:workers";
import { type ClickLogRow, type ClickTally, findLinkTarget, type LinkTarget, writeClickRollUp } from "../db/clicks";
import { slotOf } from "../domain/time-zone";
import type { ClickKind } from "../fraud/clicks";
import { instrumentEnv } from "../instrument/d1-metrics";

/**
 * Share-link clicks counted off D1 (issue 33): a click writes nothing to D1 on
 * its request path. The Worker hands each request of `/r/<code>` to the click
 * counter of the code's shard (`clickCounterFor`), which
 *
 * - answers where the link leads from its cache (one D1 read per code and
 *   TARGET_TTL_MS, by the object, not per click),
 * - decides whether the request is a unique click: a person's request
 *   (`kind` "click") whose client (IP network: IPv4 address or IPv6 /64,
 *   whatever User-Agent it sends) has not counted on this code in the last
 *   UNIQUE_CLICK_WINDOW_MS, from marks in its own storage,
 * - adds it to pending tallies (kept in its storage, so a restart loses
 *   nothing) and rolls them up into D1 at most FLUSH_MS later, in ONE batch
 *   for every code of the shard (db/clicks.ts clickRollUp).
 *
 * The admin views of clicks (stats, a user's clicks, the click log) lag the
 * clicks by at most FLUSH_MS plus the batch (docs/scaling.md). A failed
 * roll-up keeps its tallies and is retried by the next alarm.
 */

/** Codes are spread over this many counters: one D1 batch per shard per flush, whatever the number of codes. */
export const CLICK_SHARDS = 16;
/** A roll-up into D1 happens at most this long after the first click it holds: the lag of the admin views. */
export const FLUSH_MS = 2_000;
/** Where a code leads is read from D1 again after this (a new custom domain, an erased user). */
const TARGET_TTL_MS = 60_000;
/** After a failed roll-up (D1 busy), the next attempt. */
const RETRY_MS = 5_000;
/** Tallies and log rows rolled up per D1 batch, so one batch stays small. */
const MAX_STATEMENTS_PER_FLUSH = 200;

/** One request of a share link, as the Worker saw it. */
export interface Visit {
	code: string;
	host: string;
	/** ISO time of the request. */
	at: string;
	kind: ClickKind;
	/** The client a repeat is recognised by (a keyed hash of its network; fraud/clicks.ts), or null: always counts. */
	clientkey: string | null;
	iphash: string | null;
	useragent: string | null;
}

interface Pending {
	tallies: Record<string, ClickTally>;
	log: ClickLogRow[];
}

/** Marks are stored per time bucket of one window, so old ones are deleted by key range, never scanned. */
const bucketOf = (ms: number, windowMs: number) => Math.floor(ms / windowMs);
const markKey = (bucket: number, code: string, clientkey: string) => `m:${String(bucket).padStart(12, "0")}:${code}:${clientkey}`;

export class ClickCounter extends DurableObject<Env> {
	private targets = new Map<string, { target: LinkTarget; until: number }>();
	private pending: Pending | null = null;
	/** The unique-click window the Worker last gave (UNIQUE_CLICK_WINDOW_MS). */
	private lastWindowMs = 30 * 60_000;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, instrumentEnv(env, "clicks"));
	}

	/** Counts one request and answers where it leads. `windowMs`: the unique-click window (30 minutes). */
	async visit(v: Visit, windowMs: number): Promise<LinkTarget> {
		this.lastWindowMs = windowMs;
		const target = await this.target(v.code, v.host);
		if (!target.codeKnown) return target;
		const counted = v.kind === "click" && (await this.claim(v, windowMs));
		const pending = await this.load();
		const slot = `${v.code}|${slotOf(v.at)}`;
		const tally = pending.tallies[slot] ?? { code: v.code, at: v.at, requests: 0, clicks: 0 };
		tally.requests++;
		if (counted) {
			tally.clicks++;
			pending.log.push({ code: v.code, at: v.at, iphash: v.iphash, useragent: v.useragent });
		}
		pending.tallies[slot] = tally;
		await this.ctx.storage.put("pending", pending);
		if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + FLUSH_MS);
		return target;
	}

	/** Rolls every pending tally up into D1 now (the alarm does it FLUSH_MS after a click); answers the statements' count. */
	async flush(): Promise<number> {
		const pending = await this.load();
		const tallies = Object.values(pending.tallies);
		if (tallies.length === 0 && pending.log.length === 0) return 0;
		const takenTallies = tallies.slice(0, MAX_STATEMENTS_PER_FLUSH / 4);
		const takenLog = pending.log.slice(0, MAX_STATEMENTS_PER_FLUSH / 2);
		await writeClickRollUp(this.env.DB, takenTallies, takenLog);
		// Only what was written leaves: clicks counted during the batch stay pending.
		for (const t of takenTallies) {
			const key = `${t.code}|${slotOf(t.at)}`;
			const now = pending.tallies[key];
			if (!now) continue;
			now.requests -= t.requests;
			now.clicks -= t.clicks;
			if (now.requests <= 0 && now.clicks <= 0) delete pending.tallies[key];
		}
		pending.log.splice(0, takenLog.length);
		await this.ctx.storage.put("pending", pending);
		return takenTallies.length + takenLog.length;
	}

	/** Forgets `code` (its user was erased): where it led, and its clicks not yet rolled up. */
	async forget(code: string): Promise<void> {
		for (const key of this.targets.keys()) if (key.startsWith(`${code}|`)) this.targets.delete(key);
		const pending = await this.load();
		for (const [key, tally] of Object.entries(pending.tallies)) if (tally.code === code) delete pending.tallies[key];
		pending.log = pending.log.filter((row) => row.code !== code);
		await this.ctx.storage.put("pending", pending);
	}

	override async alarm(): Promise<void> {
		try {
			await this.flush();
			await this.forgetOldMarks();
		} catch (error) {
			console.error(JSON.stringify({ msg: "click roll-up failed; retried", error: String(error) }));
			await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
			return;
		}
		const left = await this.load();
		if (Object.keys(left.tallies).length > 0 || left.log.length > 0) await this.ctx.storage.setAlarm(Date.now() + FLUSH_MS);
	}

	private async target(code: string, host: string): Promise<LinkTarget> {
		const key = `${code}|${host}`;
		const cached = this.targets.get(key);
		if (cached && cached.until > Date.now()) return cached.target;
		const target = await findLinkTarget(this.env.DB, code, host);
		this.targets.set(key, { target, until: Date.now() + TARGET_TTL_MS });
		return target;
	}

	/** True when this client has not counted on this code within the window; marks it counted now. */
	private async claim(v: Visit, windowMs: number): Promise<boolean> {
		if (!v.clientkey) return true;
		const now = Date.parse(v.at);
		const bucket = bucketOf(now, windowMs);
		const keys = [markKey(bucket, v.code, v.clientkey), markKey(bucket - 1, v.code, v.clientkey)];
		const marks = await this.ctx.storage.get<number>(keys);
		for (const countedAt of marks.values()) if (now - countedAt < windowMs) return false;
		await this.ctx.storage.put(keys[0]!, now);
		return true;
	}

	/** Deletes marks of buckets older than the last two (they can no longer hold a click back), a bounded range per call. */
	private async forgetOldMarks(): Promise<void> {
		const windowMs = this.lastWindowMs;
		const end = `m:${String(bucketOf(Date.now(), windowMs) - 1).padStart(12, "0")}:`;
		const old = [...(await this.ctx.storage.list({ start: "m:", end, limit: 1024 })).keys()];
		// storage.delete takes at most 128 keys per call.
		for (let i = 0; i < old.length; i += 128) await this.ctx.storage.delete(old.slice(i, i + 128));
	}

	private async load(): Promise<Pending> {
		this.pending ??= (await this.ctx.storage.get<Pending>("pending")) ?? { tallies: {}, log: [] };
		return this.pending;
	}
}

/** The click counter of `code`'s shard: a stable hash of the code, so every click of a code meets the same marks. */
export function clickCounterFor(env: Env, code: string): DurableObjectStub<ClickCounter> {
	let hash = 0;
	for (let i = 0; i < code.length; i++) hash = (hash * 31 + code.charCodeAt(i)) >>> 0;
	return env.CLICK_COUNTER.getByName(`clicks-${hash % CLICK_SHARDS}`);
}
