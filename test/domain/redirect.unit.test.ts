import { describe, expect, it } from "vitest";
import { dashboardPath, dashboardPathOr } from "../../src/domain/redirect";

describe("dashboardPath: redirect targets stay under /dashboard on this site", () => {
	it("keeps dashboard paths, normalized, with their query and fragment", () => {
		expect(dashboardPath("/dashboard")).toBe("/dashboard");
		expect(dashboardPath("/dashboard/apps/app_1/review?status=x&cursor=2")).toBe("/dashboard/apps/app_1/review?status=x&cursor=2");
		expect(dashboardPath("/dashboard#new-app")).toBe("/dashboard#new-app");
		expect(dashboardPath("/dashboard/apps/a/review/../users")).toBe("/dashboard/apps/a/users");
	});

	it("refuses what resolves off the site or outside /dashboard", () => {
		for (const target of [
			"/dashboard/apps/app_1/review/../../../..//evil.example/x",
			"/dashboard/apps/app_1/review/..\\..\\..\\..\\\\evil.example/x",
			"/dashboard/apps/app_1/review/../../../../\\evil.example/x",
			"/dashboard/%2e%2e/%2e%2e//evil.example/x",
			"/\\evil.example/x",
			"//evil.example/x",
			"https://evil.example/dashboard",
			"javascript:alert(1)",
			"/dashboard/../admin/v1/apps",
			"/dashboardx",
			"/dashboard/\t/evil",
			"dashboard/apps",
			"",
		]) {
			expect(dashboardPath(target), target).toBeNull();
		}
		expect(dashboardPathOr(42, "/dashboard")).toBe("/dashboard");
		expect(dashboardPathOr("//evil.example", "/dashboard/apps/a/review")).toBe("/dashboard/apps/a/review");
	});
});
