import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_APP, DEMO_CAMPAIGN } from "../../scripts/demo-app.mjs";
import { startService } from "../../scripts/dev-service.mjs";

// The README's example flow, run as written in bash against `wrangler dev`
// with the demo app `npm start` creates: a README that stops working fails CI.

let service: Awaited<ReturnType<typeof startService>>;

beforeAll(async () => {
	service = await startService({ name: "readme" });
});

afterAll(async () => {
	await service?.stop();
});

async function admin(method: string, path: string, body?: unknown) {
	const res = await fetch(`${service.base}/admin/v1${path}`, {
		method,
		headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	expect(res.status).toBe(201);
	return (await res.json()) as Record<string, any>;
}

/** The shell block between the README's readme-example markers. */
function readmeExample(): string {
	const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
	const marked = /<!-- readme-example:start -->\s*```sh\n([\s\S]*?)```\s*<!-- readme-example:end -->/.exec(readme);
	if (!marked?.[1]) throw new Error("README.md has no readme-example block");
	return marked[1];
}

describe("the README's examples", () => {
	it("run as written against the demo app: every call succeeds and the share link redirects", async () => {
		const app = await admin("POST", "/apps", DEMO_APP);
		const campaign = await admin("POST", `/apps/${app.appid}/campaigns`, DEMO_CAMPAIGN);
		const script = readmeExample();
		const calls = script.split("\n").filter((line) => line.startsWith("call ")).length;
		expect(calls).toBeGreaterThanOrEqual(19);
		const run = spawnSync("bash", ["-eu", "-o", "pipefail", "-c", script], {
			encoding: "utf8",
			timeout: 120_000,
			env: {
				...process.env,
				BASE: service.base,
				AUTH: `"apikey":"${app.apikey}","privatekey":"${app.privatekey}"`,
				CAMPAIGN: String(campaign.campaignid),
				TMPDIR: mkdtempSync(join(tmpdir(), "readme-")),
			},
		});
		expect(run.status, run.stderr).toBe(0);
		const lines = run.stdout.split("\n").filter((line) => line.trim() !== "");
		const answers = lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, any>);
		expect(answers).toHaveLength(calls);
		const failed = answers.filter((a) => a.success !== true);
		expect(failed, JSON.stringify(failed)).toEqual([]);
		expect(lines).toContainEqual(expect.stringMatching(/^HTTP\/1\.1 302/));
		// The flow did what it says: Ann's redemptions, Bob's reward under review, the partial refund.
		const byMessage = (re: RegExp) => answers.find((a) => re.test(String(a.message)));
		expect(byMessage(/^Reversed/)).toMatchObject({ customid: "1002", refundvalue: 20 });
		expect(answers.find((a) => a.rewardstatus !== undefined)).toMatchObject({ rewardstatus: "UnderReview" });
		expect(answers.filter((a) => a.redeemed !== undefined).map((a) => a.redeemed)).toEqual([5, 4]);
	});
});
