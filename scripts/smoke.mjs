// `npm run smoke -- <url>`: the smoke test run after every deploy (the CI/CD
// workflow, .github/workflows/deploy.yml) and by hand against any running
// service (`npm run smoke -- http://127.0.0.1:8787` beside `npm start`).
// Read-only unless given test keys; exits 1 on the first failed check.
//
// Always: /health, the OpenAPI document, the reference page, an error answer
// (its requestid, and its docs link resolving to the code's heading).
// With ADMIN_TOKEN in the environment: the admin API answers with it.
// With SMOKE_APIKEY and SMOKE_PRIVATEKEY (use an app's TEST keys: what they
// make is invisible to live data, docs/test-mode.md): a register and a
// validatereferrercode of the new user's code, a write and a read of D1.
const base = (process.argv[2] ?? process.env.SMOKE_URL ?? "").replace(/\/+$/, "");
if (!/^https?:\/\/[^/]+/.test(base)) {
	console.error("usage: npm run smoke -- <the service's URL, e.g. https://refer.example.com>  (or SMOKE_URL)");
	process.exit(2);
}

let failed = 0;
async function check(name, run) {
	const started = Date.now();
	try {
		const detail = await run();
		console.log(`ok    ${name} (${Date.now() - started} ms)${detail ? `: ${detail}` : ""}`);
	} catch (error) {
		failed++;
		console.log(`FAIL  ${name}: ${error instanceof Error ? error.message : String(error)}`);
	}
}

function expect(condition, message) {
	if (!condition) throw new Error(message);
}

async function get(path, init = {}) {
	const res = await fetch(`${base}${path}`, { redirect: "manual", signal: AbortSignal.timeout(15_000), ...init });
	return { res, text: await res.text() };
}

const json = (text) => {
	try {
		return JSON.parse(text);
	} catch {
		return null;
	}
};

const call = (operation, body, keys) =>
	get(`/saas/v1_0/${operation}`, {
		method: "POST",
		headers: { "content-type": "application/json", "idempotency-key": `smoke-${crypto.randomUUID()}` },
		body: JSON.stringify({ ...keys, ...body }),
	});

await check("GET /health answers 200", async () => {
	const { res, text } = await get("/health");
	expect(res.status === 200 && json(text)?.success === true, `HTTP ${res.status}: ${text.slice(0, 200)}`);
	return res.headers.get("request-id") ?? undefined;
});

await check("GET /openapi.json is the API's document", async () => {
	const { res, text } = await get("/openapi.json");
	const doc = json(text);
	expect(res.status === 200 && typeof doc?.openapi === "string", `HTTP ${res.status}`);
	expect(doc.paths?.["/saas/v1_0/registerconversionevent"], "no registerconversionevent in the document");
	return `OpenAPI ${doc.openapi}, ${Object.keys(doc.paths).length} paths`;
});

await check("GET /docs serves the reference", async () => {
	const { res } = await get("/docs");
	expect(res.status === 200 && /text\/html/.test(res.headers.get("content-type") ?? ""), `HTTP ${res.status}`);
});

await check("an error answer carries its requestid and a docs link that resolves", async () => {
	const { res, text } = await call("getuserbalance", { userkey: "smoke" }, {});
	const body = json(text);
	expect(res.status === 401 && body?.errorcode === "missing_credentials", `HTTP ${res.status}: ${text.slice(0, 200)}`);
	expect(/^req_[0-9a-f]{32}$/.test(body.requestid ?? ""), `requestid ${body.requestid}`);
	expect(res.headers.get("request-id") === body.requestid, "Request-Id header differs from the body's requestid");
	const docs = new URL(body.docs);
	const page = await fetch(docs, { signal: AbortSignal.timeout(15_000) });
	const doc = await page.text();
	expect(page.status === 200 && doc.includes(`### \`${docs.hash.slice(1)}\``), `${body.docs}: HTTP ${page.status} or no such heading`);
	return body.requestid;
});

if (process.env.ADMIN_TOKEN) {
	await check("the admin API answers the admin token", async () => {
		const { res, text } = await get("/admin/v1/apps?limit=1", { headers: { authorization: `Bearer ${process.env.ADMIN_TOKEN}` } });
		expect(res.status === 200 && Array.isArray(json(text)?.apps), `HTTP ${res.status}: ${text.slice(0, 200)}`);
	});
} else console.log("skip  the admin API (no ADMIN_TOKEN)");

if (process.env.SMOKE_APIKEY && process.env.SMOKE_PRIVATEKEY) {
	const keys = { apikey: process.env.SMOKE_APIKEY, privatekey: process.env.SMOKE_PRIVATEKEY };
	await check("register and validatereferrercode with the smoke keys", async () => {
		const email = `smoke-${Date.now()}-${Math.floor(Math.random() * 1e6)}@smoke.invalid`;
		const registered = await call("register", { email, name: "Smoke test" }, keys);
		const user = json(registered.text);
		expect(registered.res.status === 200 && user?.userkey, `register: HTTP ${registered.res.status}: ${registered.text.slice(0, 200)}`);
		const code = await call("validatereferrercode", { referrercode: user.referralcode }, keys);
		expect(
			code.res.status === 200 && json(code.text)?.success === true,
			`validatereferrercode: HTTP ${code.res.status}: ${code.text.slice(0, 200)}`,
		);
		return `${keys.apikey.startsWith("ak_test_") ? "test" : "LIVE"} keys, user ${user.userkey}`;
	});
} else console.log("skip  a register round trip (no SMOKE_APIKEY / SMOKE_PRIVATEKEY)");

console.log(failed === 0 ? `smoke test passed against ${base}` : `smoke test FAILED (${failed} check(s)) against ${base}`);
process.exit(failed === 0 ? 0 : 1);
