import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// A quiet install (issue 51): npm 11 prints an `install-scripts` notice for
// every package with an install script that package.json's allowScripts does
// not decide, which reads like something broke. Every such package of the
// lockfile is decided there: true (it must run) or false (it needs none).
const ROOT = new URL("../..", import.meta.url).pathname;
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, "utf8")) as { packages: Record<string, { hasInstallScript?: boolean }> };
const allowScripts = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).allowScripts as Record<string, boolean>;

describe("npm install", () => {
	it("has every package with an install script decided in allowScripts", () => {
		const withScripts = new Set(
			Object.entries(lock.packages)
				.filter(([, meta]) => meta.hasInstallScript)
				.map(([path]) => path.split("node_modules/").at(-1) ?? path),
		);
		expect(withScripts.size).toBeGreaterThanOrEqual(3);
		expect([...withScripts].filter((name) => !(name in allowScripts)).sort()).toEqual([]);
		// The ones the project needs run; the reference page's vue-demi does not.
		expect(allowScripts).toMatchObject({ esbuild: true, workerd: true, node: true, "vue-demi": false });
	});
});
