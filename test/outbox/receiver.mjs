// A real HTTP webhook receiver for tests, on 127.0.0.1 and a free port.
// Runs in Node: as vitest's globalSetup (which `provide`s its URL as
// `webhookReceiverUrl`), or started by an end-to-end test.
//
//   POST /hooks/<key>        a delivery: recorded, then answered per the key's mode
//   GET  /__received/<key>   what <key> received: [{method, path, headers, body, at}]
//   POST /__mode/<key>       {"sequence": [{status, delayMs, body}], "default": {...}}:
//                            answers for the next requests, then the default (200 at once)
//   POST /__reset/<key>      forgets what <key> received and its mode
//
// Keys keep tests that share the receiver (test files run in parallel) apart.
import { createServer } from "node:http";

/** @typedef {{status?: number, delayMs?: number, body?: string}} Answer */

export async function startReceiver() {
	/** @type {Map<string, object[]>} */
	const received = new Map();
	/** @type {Map<string, {sequence: Answer[], default: Answer}>} */
	const modes = new Map();
	/** @type {Set<NodeJS.Timeout>} */
	const timers = new Set();

	const handle = async (req, res) => {
		const chunks = [];
		for await (const chunk of req) chunks.push(chunk);
		const body = Buffer.concat(chunks).toString("utf8");
		const url = new URL(req.url ?? "/", "http://receiver");
		const [, head = "", ...rest] = url.pathname.split("/");
		const key = decodeURIComponent(rest.join("/") || "default");
		const json = (status, value) => {
			res.writeHead(status, { "content-type": "application/json" });
			res.end(JSON.stringify(value));
		};

		if (head === "__received") return json(200, received.get(key) ?? []);
		if (head === "__reset") {
			received.delete(key);
			modes.delete(key);
			return json(200, { ok: true });
		}
		if (head === "__mode") {
			const mode = body ? JSON.parse(body) : {};
			modes.set(key, { sequence: mode.sequence ?? [], default: mode.default ?? {} });
			return json(200, { ok: true });
		}

		const list = received.get(key) ?? [];
		list.push({ method: req.method, path: url.pathname, headers: req.headers, body, at: Date.now() });
		received.set(key, list);
		const mode = modes.get(key);
		const answer = (mode && (mode.sequence.shift() ?? mode.default)) || {};
		const respond = () => {
			if (res.destroyed) return;
			res.writeHead(answer.status ?? 200, { "content-type": "text/plain" });
			res.end(answer.body ?? "ok");
		};
		if (answer.delayMs) {
			const timer = setTimeout(() => {
				timers.delete(timer);
				respond();
			}, answer.delayMs);
			timers.add(timer);
		} else respond();
	};
	// A client that goes away mid-request (a delivery given up at its time budget) fails the body's read with
	// "aborted": nothing is left to answer, and the rejection must not escape (it would fail the whole test run).
	const server = createServer((req, res) => {
		handle(req, res).catch(() => {
			if (!res.destroyed) res.destroy();
		});
	});

	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	const port = typeof address === "object" && address ? address.port : 0;
	return {
		url: `http://127.0.0.1:${port}`,
		port,
		received: (key = "default") => received.get(key) ?? [],
		close: () =>
			new Promise((resolve) => {
				for (const timer of timers) clearTimeout(timer);
				server.closeAllConnections();
				server.close(() => resolve(undefined));
			}),
	};
}

/** vitest globalSetup: one receiver for the whole run. */
export default async function setup({ provide }) {
	const receiver = await startReceiver();
	provide("webhookReceiverUrl", receiver.url);
	return () => receiver.close();
}
