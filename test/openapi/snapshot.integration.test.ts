import { expect, it } from "vitest";
import { request } from "../support/api";

/**
 * The served OpenAPI document, byte for byte, against the committed copy: a
 * restructuring must not change it, and an intended change shows up in review
 * as a diff of openapi.snapshot.json (update it with
 * `npx vitest run test/openapi/snapshot.integration.test.ts --update=all`).
 */
it("GET /openapi.json is byte-for-byte the committed document", async () => {
	const res = await request("/openapi.json");
	expect(res.status).toBe(200);
	await expect(await res.text()).toMatchFileSnapshot("./openapi.snapshot.json");
});
