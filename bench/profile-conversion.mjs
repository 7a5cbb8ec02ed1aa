// `node bench/profile-conversion.mjs`: a CPU profile of registerconversionevent
// in workerd (wrangler dev's inspector, the V8 sampling profiler), for the
// first reward of a friend (a new UserLedger) and for a friend whose ledger
// exists (steady state). Prints where the Worker's JavaScript spends its CPU:
// self time by function and by source file, and the wall-time spans of the
// request path (D1 and ledger calls, from the instrumentation headers).
// BENCH_PROFILE_EVENTS: events per case (default 200). BENCH_PROFILE_DUMP=/tmp/p
// also writes the raw profiles (/tmp/p-first-reward.cpuprofile, /tmp/p-steady...).
// wrangler's own WebSocket client (a dependency of wrangler): its inspector proxy refuses Node's built-in one.
import { writeFileSync } from "node:fs";
import WebSocket from "ws";
import { freePort, startService } from "../scripts/dev-service.mjs";

const EVENTS = Number(process.env.BENCH_PROFILE_EVENTS || 200);
const log = (...args) => console.log(`[profile ${new Date().toISOString().slice(11, 19)}]`, ...args);
const inspectorPort = await freePort();
const service = await startService({
	name: "profile",
	vars: { D1_QUERY_COUNT: "1" },
	args: ["--inspector-port", String(inspectorPort)],
	// BENCH_PERSIST_BASE=/dev/shm: local state on tmpfs, so disk syncs do not show as time in SQLite calls.
	persistBase: process.env.BENCH_PERSIST_BASE || undefined,
});
const base = service.base;

/** A DevTools protocol session on the Worker's isolate. */
async function inspector() {
	const targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json();
	const target = targets.find((t) => t.webSocketDebuggerUrl) ?? targets[0];
	const ws = new WebSocket(target.webSocketDebuggerUrl);
	await new Promise((resolve, reject) => {
		ws.on("open", resolve);
		ws.on("error", reject);
	});
	let id = 0;
	const pending = new Map();
	// The proxy echoes the method name in its answers: an answer is known by its id alone.
	ws.on("message", (data) => {
		const msg = JSON.parse(String(data));
		if (msg.id && pending.has(msg.id)) {
			pending.get(msg.id)(msg);
			pending.delete(msg.id);
		}
	});
	const send = (method, params = {}) =>
		new Promise((resolve, reject) => {
			const n = ++id;
			pending.set(n, (msg) => (msg.error ? reject(new Error(JSON.stringify(msg.error))) : resolve(msg.result ?? {})));
			ws.send(JSON.stringify({ id: n, method, params }));
		});
	return { send, close: () => ws.close() };
}

const admin = async (method, path, body) => {
	const res = await fetch(`${base}/admin/v1${path}`, {
		method,
		headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
		body: body && JSON.stringify(body),
	});
	const json = await res.json();
	if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
	return json;
};

/**
 * A sample stands for at most this much time (ms; the interval is 0.2 ms).
 * workerd's isolate takes no samples while it waits (for SQLite of another
 * thread, the network, a timer), so the time since the previous sample can be
 * a gap of many ms; charged whole to the next sample, it went to whatever
 * runs first after a wait (the flush's `due` read, the alarm's `nextDue`, the
 * consumer's parse of a message), and on a loaded machine gaps were 77% of a
 * profile's time (bench/README.md, issue 33's CPU). Capped, the shares are
 * those of the samples the isolate actually ran.
 */
const SAMPLE_CAP_MS = 0.5;

/** Self time per function and per file from a V8 CPU profile (ms; each sample capped at SAMPLE_CAP_MS). */
function summarize(profile) {
	const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
	const self = new Map();
	const dt = profile.timeDeltas;
	let uncapped = 0;
	for (let i = 0; i < profile.samples.length; i++) {
		const id = profile.samples[i];
		const ms = (dt[i] ?? 0) / 1000;
		if (byNode.get(id).callFrame.functionName !== "(idle)") uncapped += ms;
		self.set(id, (self.get(id) ?? 0) + Math.min(ms, SAMPLE_CAP_MS));
	}
	const byFunction = new Map();
	const byFile = new Map();
	let total = 0;
	for (const [id, ms] of self) {
		const node = byNode.get(id);
		const f = node.callFrame;
		// Waiting for I/O is not CPU.
		if (f.functionName === "(idle)") continue;
		// One bundle (index.js): functions are told apart by name and line.
		const file = f.url || `(${f.functionName || "native"})`;
		const name = `${f.functionName || "(anonymous)"} ${file}${f.url ? `:${f.lineNumber + 1}` : ""}`;
		byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
		byFile.set(file, (byFile.get(file) ?? 0) + ms);
		total += ms;
	}
	// Inclusive time: each sample counts once for every distinct named function on its stack.
	const parent = new Map();
	for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
	const inclusive = new Map();
	for (const [id, ms] of self) {
		if (byNode.get(id).callFrame.functionName === "(idle)") continue;
		const seen = new Set();
		for (let at = id; at !== undefined; at = parent.get(at)) {
			const name = byNode.get(at).callFrame.functionName;
			if (!name || name.startsWith("(") || seen.has(name)) continue;
			seen.add(name);
			inclusive.set(name, (inclusive.get(name) ?? 0) + ms);
		}
	}
	const top = (map, n) =>
		[...map]
			.sort((a, b) => b[1] - a[1])
			.slice(0, n)
			.map(([k, v]) => ({ where: k, ms: Math.round(v), pct: Math.round((v / total) * 1000) / 10 }));
	return {
		totalMs: Math.round(total),
		// The sum of the gaps' time too, as this script summed before the cap: for comparison with older runs.
		uncappedMs: Math.round(uncapped),
		byFile: top(byFile, 15),
		byFunction: top(byFunction, 25),
		inclusive: top(inclusive, 40),
	};
}

try {
	const app = await admin("POST", "/apps", { name: "Profile", landingurl: "https://example.com/join" });
	const auth = { apikey: app.apikey, privatekey: app.privatekey };
	await admin("POST", `/apps/${app.appid}/campaigns`, {
		campaignname: "Profile",
		velocitythreshold: 0,
		rewardrules: [
			{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
			{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "%", maxrewardamount: 50 },
		],
	});
	const call = async (op, body) => {
		const res = await fetch(`${base}/saas/v1_0/${op}`, {
			method: "POST",
			// x-count-d1: the request's D1 and ledger time in its answer's headers (src/http/d1-metrics.ts).
			headers: { "content-type": "application/json", "x-count-d1": "1" },
			body: JSON.stringify({ ...auth, ...body }),
		});
		const json = await res.json();
		if (!res.ok) throw new Error(`${op}: ${res.status} ${JSON.stringify(json)}`);
		const h = (name) => Number(res.headers.get(name) ?? 0);
		return { json, d1ms: h("x-d1-ms"), doms: h("x-do-ms") };
	};
	const referrers = [];
	for (let i = 0; i < 20; i++) referrers.push((await call("register", { email: `r${i}@p.example.com` })).json);
	const friends = [];
	for (const [i, r] of referrers.entries()) {
		const users = Array.from({ length: Math.ceil(EVENTS / referrers.length) }, (_, j) => ({
			email: `f${i}-${j}@p.example.com`,
			referrercode: r.referralcode,
		}));
		friends.push(...(await admin("POST", `/apps/${app.appid}/users:import`, { users })).users.map((u) => u.userkey));
	}
	let customid = Date.now() * 1000;
	const session = await inspector();
	await session.send("Profiler.enable");
	await session.send("Profiler.setSamplingInterval", { interval: 200 });
	const report = {};
	for (const phase of ["first-reward", "steady"]) {
		await new Promise((r) => setTimeout(r, 3000));
		await session.send("Profiler.start");
		const workerdBefore = service.cpuByProcess().workerd ?? 0;
		const started = Date.now();
		const spans = { d1ms: 0, doms: 0 };
		for (const friend of friends.slice(0, EVENTS)) {
			const r = await call("registerconversionevent", {
				userkey: friend,
				eventname: "Purchase",
				transactionvalue: 100,
				customid: String(++customid),
				growthhack: "SaaS_Referrals",
			});
			spans.d1ms += r.d1ms;
			spans.doms += r.doms;
		}
		const wallMs = Date.now() - started;
		// The flushes and the consumer run after the responses: let them finish inside the profile.
		await new Promise((r) => setTimeout(r, 3000));
		const { profile } = await session.send("Profiler.stop");
		// The whole workerd process (the isolate, SQLite of D1 and the ledgers, the runtime), settling time included.
		const workerdMs = ((service.cpuByProcess().workerd ?? 0) - workerdBefore) * 1000;
		const summary = summarize(profile);
		// The raw profile, for Chrome DevTools or a finer breakdown than the summary's.
		if (process.env.BENCH_PROFILE_DUMP) writeFileSync(`${process.env.BENCH_PROFILE_DUMP}-${phase}.cpuprofile`, JSON.stringify(profile));
		report[phase] = {
			events: EVENTS,
			wallMsPerEvent: Math.round((wallMs / EVENTS) * 10) / 10,
			d1MsPerEvent: Math.round((spans.d1ms / EVENTS) * 10) / 10,
			ledgerMsPerEvent: Math.round((spans.doms / EVENTS) * 10) / 10,
			// The isolate's sampled JavaScript (capped samples): a share's denominator, not a CPU time to compare with workerd's.
			cpuMsPerEvent: Math.round((summary.totalMs / EVENTS) * 10) / 10,
			workerdCpuMsPerEvent: Math.round((workerdMs / EVENTS) * 10) / 10,
			...summary,
		};
		log(phase, JSON.stringify(report[phase], null, 1));
	}
	session.close();
	console.log(JSON.stringify(report, null, 2));
} finally {
	await service.stop();
}
