import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { expect } from "vitest";

// docs/integration.md's ```js blocks, run as written by the e2e tests (integration-guide,
// webhook-receivers). Modules are written into test/e2e/.generated (git-ignored) inside the
// repository, so `@referral-rewards/sdk`, `express` and `hono` resolve as in an integrator's project.

const ROOT = new URL("../..", import.meta.url).pathname;
const GENERATED = new URL("./.generated/", import.meta.url);

/** Builds the SDK's dist (generated types, then tsc), as `npm pack` would. */
export function buildSdk(): void {
	const run = spawnSync("npm", ["run", "build", "--workspace", "@referral-rewards/sdk", "--silent"], { cwd: ROOT, encoding: "utf8" });
	if (run.status !== 0) throw new Error(`SDK build failed:\n${run.stdout}\n${run.stderr}`);
}

/** The guide's ```js blocks, in order. */
export function guideBlocks(): string[] {
	const guide = readFileSync(new URL("../../docs/integration.md", import.meta.url), "utf8");
	return [...guide.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

/** The one block that contains `marker` (so a reordered guide still finds its snippets; a removed one fails here). */
export function block(blocks: string[], marker: string): string {
	const found = blocks.filter((b) => b.includes(marker));
	expect(found, `exactly one guide block with ${marker}`).toHaveLength(1);
	return found[0] ?? "";
}

/** Hoists a block's `import` lines to the top of a module made of several blocks. */
export function moduleOf(parts: string[]): string {
	const imports = new Set<string>();
	const body: string[] = [];
	for (const part of parts)
		for (const line of part.split("\n")) {
			if (/^import .* from "[^"]+";$/.test(line)) imports.add(line);
			else body.push(line);
		}
	return `${[...imports].join("\n")}\n${body.join("\n")}`;
}

let counter = 0;
/** Writes `source` as a module under test/e2e/.generated and imports it. */
export async function runModule(name: string, source: string): Promise<Record<string, any>> {
	mkdirSync(GENERATED, { recursive: true });
	const file = new URL(`${name}-${process.pid}-${counter++}.mjs`, GENERATED);
	writeFileSync(file, source);
	return import(file.href);
}
