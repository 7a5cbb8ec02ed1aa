import { describe, expect, it } from "vitest";
import type { App } from "../../src/db/apps";
import { type AuthSteps, DUMMY_HASH, verifyCredentials } from "../../src/http/auth";

const app = { appid: "app_1", apikey: "ak_known", privatekeyHash: "a".repeat(64) } as App;

/** Steps that record what runs, in order, with the lengths of what is compared. */
function recording() {
	const trace: string[] = [];
	const steps: AuthSteps = {
		async lookup(apikey) {
			trace.push("lookup");
			return apikey === app.apikey ? app : null;
		},
		async hash(text) {
			trace.push("hash");
			return text === "right" ? app.privatekeyHash : "b".repeat(64);
		},
		equal(a, b) {
			trace.push(`equal(${a.length},${b.length})`);
			return a === b;
		},
	};
	return { steps, trace };
}

describe("verifyCredentials has no oracle", () => {
	it("runs the same steps, comparing equal lengths, for an unknown apikey and a wrong privatekey", async () => {
		const unknown = recording();
		const wrong = recording();
		const right = recording();
		expect(await verifyCredentials(unknown.steps, "ak_unknown", "whatever")).toBeNull();
		expect(await verifyCredentials(wrong.steps, app.apikey, "whatever")).toBeNull();
		expect(await verifyCredentials(right.steps, app.apikey, "right")).toBe(app);
		expect(unknown.trace).toEqual(["lookup", "hash", "equal(64,64)"]);
		expect(wrong.trace).toEqual(unknown.trace);
		expect(right.trace).toEqual(unknown.trace);
		expect(DUMMY_HASH).toHaveLength(64);
	});
	it("never accepts an unknown key, even when the presented key hashes to the dummy", async () => {
		const { steps } = recording();
		steps.hash = async () => DUMMY_HASH;
		expect(await verifyCredentials(steps, "ak_unknown", "x")).toBeNull();
	});
});
