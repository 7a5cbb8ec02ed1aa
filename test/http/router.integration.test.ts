import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { routedPath } from "../../src/http/router";
import { admin, request } from "../support/api";

describe("routing (http/router.ts)", () => {
	it("matches with RegExpRouter, not a fallback", async () => {
		expect((await request("/health")).status).toBe(200);
		expect((app.router as { name: string }).name).toBe("RegExpRouter");
	});

	it("routes a literal colon, as sent or percent-encoded, and nothing near it", async () => {
		expect(routedPath(new Request("http://x.test/admin/v1/apps/a/users:import?q=1"))).toBe("/admin/v1/apps/a/users%3Aimport");
		expect(routedPath(new Request("http://x.test/health"))).toBe("/health");
		for (const path of ["/apps/app_nosuchapp/users:import", "/apps/app_nosuchapp/users%3Aimport"]) {
			const res = await admin("POST", path, { users: [{ email: "x@example.com" }] });
			expect(res.status, path).toBe(404);
			expect(res.body.errorcode, path).toBe("app_not_found");
		}
		const near = await admin("POST", "/apps/app_nosuchapp/users:export", { users: [] });
		expect(near.body.errorcode).toBe("not_found");
	});
});
