import { readFileSync } from "node:fs";
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { describe, expect, it } from "vitest";

// The CI/CD workflow (.github/workflows/deploy.yml, docs/deploy.md "CI/CD"),
// checked by GitHub's own workflow parser (@actions/workflow-parser, the one
// behind GitHub's Actions language service, with GitHub's workflow schema):
// no actionlint binary is installable from npm without a download at test
// time, so this is the schema check in its place, plus what the workflow must
// do: test every push, deploy staging from main and production from a tag,
// each followed by the smoke test against the deployed URL.
const ROOT = new URL("../..", import.meta.url).pathname;
const WORKFLOW = readFileSync(`${ROOT}.github/workflows/deploy.yml`, "utf8");
const SCRIPTS = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).scripts as Record<string, string>;
const DEPLOY_DOC = readFileSync(`${ROOT}docs/deploy.md`, "utf8");

async function check(content: string) {
	const parsed = parseWorkflow({ name: "deploy.yml", content }, new NoOperationTraceWriter());
	const errors = parsed.context.errors.getErrors().map((e) => e.message);
	const template = await convertWorkflowTemplate(parsed.context, parsed.value as never);
	return { errors: [...errors, ...(template.errors ?? []).map((e) => e.Message)], template };
}

const jobOf = (template: Awaited<ReturnType<typeof check>>["template"], id: string) => {
	const job = template.jobs?.find((j) => j.id.value === id);
	expect(job, id).toBeDefined();
	return job as any;
};
const runsOf = (job: any): string[] => job.steps.map((s: any) => s.run?.value ?? s.run?.toString?.() ?? "").filter(Boolean);

describe(".github/workflows/deploy.yml", () => {
	it("passes GitHub's workflow schema", async () => {
		const { errors } = await check(WORKFLOW);
		expect(errors).toEqual([]);
	});

	it("the check fails a workflow with a misspelt key or a job that needs an unknown one (so it can fail)", async () => {
		expect((await check(WORKFLOW.replace("runs-on: ubuntu-latest", "runs-onn: ubuntu-latest"))).errors.join("\n")).toMatch(/runs-onn/);
		expect((await check(WORKFLOW.replace("needs: test", "needs: tests"))).errors.join("\n")).toMatch(/tests/);
	});

	it("tests, then deploys staging from main and production from a tag, each followed by the smoke test", async () => {
		const { template } = await check(WORKFLOW);
		expect(runsOf(jobOf(template, "test"))).toEqual(["bash .ci/run"]);
		for (const [env, when] of [
			["staging", "github.ref == 'refs/heads/main'"],
			["production", "startsWith(github.ref, 'refs/tags/v')"],
		] as const) {
			const job = jobOf(template, `deploy-${env}`);
			expect(job.needs.map((n: any) => n.value)).toEqual(["test"]);
			expect(String(job.if?.expr ?? job.if)).toContain(when);
			const runs = runsOf(job);
			expect(runs.indexOf(`npm run deploy:${env}`)).toBeGreaterThan(-1);
			expect(runs.indexOf('npm run smoke -- "$DEPLOY_URL"')).toBeGreaterThan(runs.indexOf(`npm run deploy:${env}`));
		}
	});

	it("runs only npm scripts that exist, and every secret it reads is named in docs/deploy.md", () => {
		for (const [, script] of WORKFLOW.matchAll(/^\s*- run: npm run ([\w:-]+)/gm)) expect(SCRIPTS[script ?? ""], script).toBeDefined();
		const secrets = new Set([...WORKFLOW.matchAll(/secrets\.(\w+)/g)].map((m) => m[1] ?? ""));
		expect([...secrets].sort()).toEqual([
			"ADMIN_TOKEN",
			"CLOUDFLARE_ACCOUNT_ID",
			"CLOUDFLARE_API_TOKEN",
			"SMOKE_APIKEY",
			"SMOKE_PRIVATEKEY",
		]);
		for (const secret of secrets) expect(DEPLOY_DOC, secret).toContain(`\`${secret}\``);
	});
});
