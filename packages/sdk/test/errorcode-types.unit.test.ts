import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

// ReferralError.errorcode is the union of the codes the service documents,
// still open to codes a newer service adds (src/errors.ts). Compiled with the
// SDK's own tsconfig and TypeScript, as an integrator's project would.
const SDK = new URL("..", import.meta.url).pathname;
const TSC = join(SDK, "../../node_modules/typescript/bin/tsc");

function compile(file: string) {
	const dir = mkdtempSync(join(tmpdir(), "sdk-types-"));
	const config = join(dir, "tsconfig.json");
	writeFileSync(
		config,
		JSON.stringify({
			extends: join(SDK, "tsconfig.json"),
			compilerOptions: { noEmit: true, rootDir: SDK, noUnusedLocals: false },
			files: [join(SDK, "test/types", file)],
		}),
	);
	return spawnSync(process.execPath, [TSC, "-p", config], { encoding: "utf8", timeout: 120_000 });
}

describe("ReferralError.errorcode's type", () => {
	// The documented codes come from src/openapi.ts, generated from the served document (not committed).
	beforeAll(() => {
		if (!existsSync(join(SDK, "src/openapi.ts"))) spawnSync("npm", ["run", "generate", "--silent"], { cwd: SDK, timeout: 120_000 });
	});

	it("narrows on documented codes and refuses misspelt ones (every @ts-expect-error is needed)", () => {
		const run = compile("errorcode.ts");
		expect(run.stdout + run.stderr).toBe("");
		expect(run.status).toBe(0);
	});

	it("refuses an unknown code literal", () => {
		const run = compile("errorcode-fails.ts");
		expect(run.status).not.toBe(0);
		expect(run.stdout).toMatch(
			/errorcode-fails\.ts\(4,14\): error TS(2322|2820): Type '"insuficient_balance"' is not assignable to type 'ErrorCode'/,
		);
	});
});
