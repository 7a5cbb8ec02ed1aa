import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { INVITATION_LINK, linkFromMailbox, RESET_LINK } from "./mailbox";

// Issue 47 against `wrangler dev`, over real HTTP: `Host: evil.example` on the
// reset form emailed http://evil.example/dashboard/reset/..., and invitations
// built their link the same way. Links in emails are built on PUBLIC_ORIGIN
// (scripts/dev-service.mjs sets it to the service's own origin), never on the
// request's Host.

let service: Awaited<ReturnType<typeof startService>>;
const context = () => service.logs().slice(-2000);

beforeAll(async () => {
	service = await startService({ name: "links" });
});

afterAll(async () => {
	await service?.stop();
});

interface Raw {
	status: number;
	cookies: string[];
	text: string;
}

/** One HTTP request with a Host header of our choosing (fetch does not let a caller set Host). */
function raw(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
	const url = new URL(path, service.base);
	return new Promise((resolve, reject) => {
		const req = httpRequest(
			{
				host: url.hostname,
				port: url.port,
				path: url.pathname,
				method,
				headers: { ...headers, ...(body ? { "content-length": Buffer.byteLength(body) } : {}) },
			},
			(res) => {
				let text = "";
				res.setEncoding("utf8");
				res.on("data", (chunk) => {
					text += chunk;
				});
				res.on("end", () => resolve({ status: res.statusCode ?? 0, cookies: res.headers["set-cookie"] ?? [], text }));
			},
		);
		req.on("error", reject);
		req.end(body);
	});
}

const EVIL = { host: "evil.example" };
const json = (token: string) => ({ ...EVIL, authorization: `Bearer ${token}`, "content-type": "application/json" });

describe("links in emails", () => {
	it("an invitation and a reset requested with Host: evil.example carry the service's configured origin", async () => {
		const created = await raw(
			"POST",
			"/admin/v1/apps",
			json(service.adminToken),
			JSON.stringify({ name: "Links", landingurl: "https://shop.example.com/" }),
		);
		expect(created.status, created.text).toBe(201);
		const { appid } = JSON.parse(created.text) as { appid: string };
		const email = `links-${crypto.randomUUID()}@example.com`;
		const invited = await raw(
			"POST",
			`/admin/v1/apps/${appid}/members`,
			json(service.adminToken),
			JSON.stringify({ email, role: "viewer" }),
		);
		expect(invited.status, invited.text).toBe(201);
		const invitation = await linkFromMailbox(service.base, email, /invited/, INVITATION_LINK, context);
		expect(invitation.startsWith(`${service.base}/dashboard/invitations/inv_`), invitation).toBe(true);

		const form = await raw("GET", "/dashboard/reset", EVIL);
		const cookie = form.cookies.map((c) => c.split(";")[0]).join("; ");
		const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)?.[1] ?? "";
		const asked = await raw(
			"POST",
			"/dashboard/reset",
			{ ...EVIL, cookie, "content-type": "application/x-www-form-urlencoded" },
			new URLSearchParams({ _csrf: csrf, email }).toString(),
		);
		expect(asked.status, asked.text.slice(0, 500)).toBe(200);
		const reset = await linkFromMailbox(service.base, email, /Reset your/, RESET_LINK, context);
		expect(reset.startsWith(`${service.base}/dashboard/reset/rst_`), reset).toBe(true);
		expect(reset).not.toContain("evil.example");
	});
});
