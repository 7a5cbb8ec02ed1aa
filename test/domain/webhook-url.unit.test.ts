import { describe, expect, it } from "vitest";
import { webhookUrlPolicy, webhookUrlProblem } from "../../src/domain/webhook-url";

const production = { allowLoopback: false, ownHosts: ["referrals.example.com"] };
const development = { allowLoopback: true, ownHosts: ["127.0.0.1:8787"] };

describe("webhook URL policy", () => {
	it.each([
		["http://hooks.example.com/x", "https"],
		["ftp://hooks.example.com/x", "https"],
		["https://user:pass@hooks.example.com/x", "user name"],
		["https://user@hooks.example.com/x", "user name"],
		["https://169.254.169.254/latest/meta-data", "private"],
		["https://[::ffff:169.254.169.254]/", "private"],
		["https://[fd00:ec2::254]/", "private"],
		["https://metadata.google.internal/", "private"],
		["https://100.100.100.200/", "private"],
		["https://10.0.0.1/", "private"],
		["https://172.16.5.4/", "private"],
		["https://192.168.1.1/", "private"],
		["https://[fe80::1]/", "private"],
		["https://0.0.0.0/", "private"],
		["https://127.0.0.1/", "loopback"],
		["https://2130706433/", "loopback"],
		["https://0x7f.1/", "loopback"],
		["https://[::1]:8787/", "loopback"],
		["https://localhost/", "loopback"],
		["https://referrals.example.com/admin/v1/apps", "this service"],
		["not a url", "URL"],
	])("refuses %s in production", (url, reason) => {
		expect(webhookUrlProblem(url, production)).toContain(reason);
	});
	it("accepts public https URLs", () => {
		for (const url of ["https://hooks.example.com/x?y=1", "https://93.184.216.34/hook", "https://[2606:4700::1111]/"]) {
			expect(webhookUrlProblem(url, production), url).toBeNull();
		}
	});
	it("allows loopback (http too) in development, but not the service's own host and port", () => {
		expect(webhookUrlProblem("http://127.0.0.1:9000/hook", development)).toBeNull();
		expect(webhookUrlProblem("http://[::1]:9000/hook", development)).toBeNull();
		expect(webhookUrlProblem("http://127.0.0.1:8787/admin/v1/apps", development)).toContain("this service");
		expect(webhookUrlProblem("http://10.0.0.1/hook", development)).toContain("https");
		expect(webhookUrlProblem("https://169.254.169.254/", development)).toContain("private");
	});
	it("reads the policy from the environment and the request", () => {
		expect(webhookUrlPolicy({ ALLOW_LOOPBACK_WEBHOOKS: "1" }, "http://127.0.0.1:8787/admin/v1/apps")).toEqual(development);
		expect(webhookUrlPolicy({ SHARE_BASE_URL: "https://r.example.com" })).toEqual({ allowLoopback: false, ownHosts: ["r.example.com"] });
	});
});
