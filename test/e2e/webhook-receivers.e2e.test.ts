import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_CAMPAIGN } from "../../scripts/demo-app.mjs";
import { freePort, startService } from "../../scripts/dev-service.mjs";
import { block, buildSdk, guideBlocks, moduleOf, runModule } from "./guide-modules";
import { waitFor } from "./wait";

// docs/integration.md's three webhook receivers (Express, Hono, a Worker's
// fetch handler), run as written: each is a real HTTP server on 127.0.0.1
// (the Worker in workerd, under its own `wrangler dev`), the service under `wrangler dev`
// delivers a real `user.registered` to it, and each must pass the raw body to
// the SDK's verifyWebhook: it accepts the delivery, and refuses (400) a signed
// delivery whose body was changed. Express is a dev dependency for this test only.

let service: Awaited<ReturnType<typeof startService>>;
let app: Record<string, any>;
const blocks = guideBlocks();
const PATH = "/webhooks/referrals";

/** The product's side the handler block assumes: its table of seen webhook ids (what passed verification), and two effects. */
const STUBS = `
const seen = [];
const db = { webhookIds: { async insertIfAbsent(id) { if (seen.includes(id)) return false; seen.push(id); return true; } } };
const notifyUser = async () => {};
const refreshWallet = async () => {};
`;
const HANDLER = block(blocks, "export async function handleReferralEvent(");

async function adminCall(method: string, path: string, body?: unknown) {
	const res = await fetch(`${service.base}/admin/v1${path}`, {
		method,
		headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	expect(res.ok, await res.clone().text()).toBe(true);
	return (await res.json()) as Record<string, any>;
}

function listen(server: Server): Promise<string> {
	return new Promise((resolve) =>
		server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
	);
}

/** Node's HTTP server in front of a fetch handler (what @hono/node-server does), the body passed through as bytes. */
function serveFetch(handle: (request: Request) => Promise<Response> | Response): Server {
	return createServer(async (req, res) => {
		const chunks: Buffer[] = [];
		for await (const chunk of req) chunks.push(chunk as Buffer);
		const headers = new Headers();
		for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, [value].flat().join(", "));
		const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
		const response = await handle(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body }));
		res.writeHead(response.status, Object.fromEntries(response.headers));
		res.end(Buffer.from(await response.arrayBuffer()));
	});
}

interface Receiver {
	url: string;
	seen(): Promise<string[]>;
	close(): Promise<void>;
}

/** A delivery signed with the app's secret, as the service signs (Standard Webhooks). */
function signed(body: string) {
	const id = `msg_${crypto.randomUUID()}`;
	const at = new Date();
	const signature = new Webhook(app.webhooksecret).sign(id, at, body);
	return {
		"content-type": "application/json",
		"webhook-id": id,
		"webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
		"webhook-signature": signature,
	};
}

async function expectVerifies(receiver: Receiver) {
	// A real delivery: the app's webhook URL is this receiver; a sign-up makes user.registered.
	await adminCall("PATCH", `/apps/${app.appid}`, { webhookurl: `${receiver.url}${PATH}` });
	const email = `hook-${crypto.randomUUID()}@example.com`;
	const registered = await fetch(`${service.base}/saas/v1_0/register`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ apikey: app.apikey, privatekey: app.privatekey, email }),
	});
	expect(registered.status).toBe(200);
	const seen = await waitFor(
		"the delivery of user.registered",
		async () => {
			const ids = await receiver.seen();
			return ids.length > 0 ? ids : undefined;
		},
		{ timeoutMs: 30_000 },
	);
	expect(seen).toHaveLength(1);

	// The same signature over a changed body: refused, and the handler never ran.
	const body = JSON.stringify({
		type: "reward.created",
		timestamp: new Date().toISOString(),
		livemode: true,
		data: { userkey: "u1", reward: { reward: "10", rewardunit: "USD" } },
	});
	const headers = signed(body);
	const changed = await fetch(`${receiver.url}${PATH}`, { method: "POST", headers, body: body.replace('"10"', '"1000"') });
	expect(changed.status).toBe(400);
	expect(await receiver.seen()).not.toContain(headers["webhook-id"]);
	// And the unchanged one passes (so the refusal above was the body's).
	const unchanged = await fetch(`${receiver.url}${PATH}`, { method: "POST", headers, body });
	expect(unchanged.status).toBe(204);
	expect(await receiver.seen()).toContain(headers["webhook-id"]);
	await receiver.close();
}

beforeAll(async () => {
	buildSdk();
	service = await startService({ name: "receivers" });
	app = await adminCall("POST", "/apps", { name: "Receivers", landingurl: "https://shop.example.com/join" });
	await adminCall("POST", `/apps/${app.appid}/campaigns`, DEMO_CAMPAIGN);
	process.env.REFERRALS_WEBHOOKSECRET = app.webhooksecret;
});

afterAll(async () => {
	await service?.stop();
});

describe("docs/integration.md's webhook receivers", () => {
	it("Express: express.raw's bytes to verifyWebhook", async () => {
		const mod = await runModule(
			"express",
			`${moduleOf([HANDLER, block(blocks, 'express.raw({ type: "application/json" })')])}\n${STUBS}\nexport { seen };\n`,
		);
		const server: Server = mod.app.listen(0, "127.0.0.1");
		await new Promise((resolve) => server.once("listening", resolve));
		const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
		await expectVerifies({ url, seen: async () => [...mod.seen], close: () => new Promise((r) => server.close(() => r())) });
	});

	it("Hono: c.req.text() to verifyWebhook", async () => {
		const mod = await runModule("hono", `${moduleOf([HANDLER, block(blocks, 'from "hono"')])}\n${STUBS}\nexport { seen };\n`);
		const server = serveFetch((request) => mod.app.fetch(request));
		const url = await listen(server);
		await expectVerifies({ url, seen: async () => [...mod.seen], close: () => new Promise((r) => server.close(() => r())) });
	});

	it("a Worker's fetch handler: request.text() to verifyWebhook, in workerd", async () => {
		// The block as a Worker's module, bundled with the SDK as wrangler would; a route added beside it reads what passed.
		const worker = block(blocks, "async fetch(request, env)").replace("export default {", "const guideWorker = {");
		const source = `${moduleOf([HANDLER, worker])}\n${STUBS}
export default {
	fetch(request, env) {
		if (new URL(request.url).pathname === "/__seen") return Response.json(seen);
		return guideWorker.fetch(request, env);
	},
};
`;
		// Under `wrangler dev`, which bundles the SDK into the Worker as a deploy would; the secret as a var of this test only.
		const dir = new URL(`./.generated/receiver-worker-${process.pid}/`, import.meta.url);
		mkdirSync(dir, { recursive: true });
		writeFileSync(new URL("index.mjs", dir), source);
		writeFileSync(
			new URL("wrangler.toml", dir),
			`name = "webhook-receiver"\nmain = "index.mjs"\ncompatibility_date = "2026-11-01"\n[vars]\nREFERRALS_WEBHOOKSECRET = "${app.webhooksecret}"\n`,
		);
		const port = await freePort();
		const dev = spawn(
			"npx",
			["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--config", fileURLToPath(new URL("wrangler.toml", dir))],
			{
				cwd: fileURLToPath(dir),
				detached: true,
				stdio: ["ignore", "pipe", "pipe"],
				env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
			},
		);
		let log = "";
		dev.stdout?.on("data", (c) => (log += c));
		dev.stderr?.on("data", (c) => (log += c));
		const url = `http://127.0.0.1:${port}`;
		const stop = async () => {
			if (dev.pid !== undefined && dev.exitCode === null) process.kill(-dev.pid, "SIGTERM");
		};
		try {
			await waitFor(
				"the receiver Worker under wrangler dev",
				() =>
					fetch(`${url}/__seen`)
						.then((r) => (r.ok ? true : undefined))
						.catch(() => undefined),
				{
					timeoutMs: 90_000,
					context: () => log.slice(-2000),
				},
			);
			await expectVerifies({ url, seen: async () => (await fetch(`${url}/__seen`)).json() as Promise<string[]>, close: stop });
		} finally {
			await stop();
		}
	});
});
