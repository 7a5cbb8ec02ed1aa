import { describe, expect, it } from "vitest";
import { client, createApp } from "../support/api";
import { fetchPage, signIn } from "../support/dashboard";

/** The dashboard's "Test data" switch (docs/test-mode.md). */
describe("dashboard test data switch", () => {
	it("is on every app page; on, the pages show only test data under a banner, off only live data", async () => {
		const app = await createApp();
		const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
		await app.api("register", { email: "live-person@x.com" });
		await client({ apikey: testapikey, privatekey: testprivatekey })("register", { email: "test-person@x.com" });
		const session = await signIn();

		const off = await (await session.get(`/dashboard/apps/${app.appid}/users`)).text();
		expect(off).toContain("live-person@x.com");
		expect(off).not.toContain("test-person@x.com");
		expect(off).toContain('aria-pressed="false">Test data: off');
		expect(off).not.toContain("flash testmode");

		const switched = await session.post(`/dashboard/apps/${app.appid}/mode`, { mode: "test" });
		expect(switched.status).toBe(303);
		const mode =
			switched.headers
				.getSetCookie()
				.find((c) => c.startsWith("dashboard_mode="))
				?.split(";")[0] ?? "";
		expect(mode).toBe("dashboard_mode=test");
		const cookie = `${session.cookie}; ${mode}`;
		const on = await (await fetchPage(`/dashboard/apps/${app.appid}/users`, { headers: { cookie } })).text();
		expect(on).toContain("test-person@x.com");
		expect(on).not.toContain("live-person@x.com");
		expect(on).toContain('aria-pressed="true">Test data: on');
		expect(on).toContain('<p class="flash testmode" role="status" data-testid="test-mode-statement"><strong>Test data.</strong>');
		// A refused switch (no CSRF token) changes nothing.
		const forged = await fetchPage(`/dashboard/apps/${app.appid}/mode`, {
			method: "POST",
			headers: { cookie: session.cookie },
			body: new URLSearchParams({ mode: "test" }),
		});
		expect(forged.status).toBe(403);
		expect(forged.headers.getSetCookie().some((c) => c.startsWith("dashboard_mode="))).toBe(false);
	});
});
