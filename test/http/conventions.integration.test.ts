import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp, request } from "../support/api";

async function post(path: string, body: BodyInit | null, headers: Record<string, string> = { "content-type": "application/json" }) {
	const res = await request(path, { method: "POST", headers, body });
	const text = await res.text();
	return { status: res.status, contentType: res.headers.get("content-type"), body: JSON.parse(text) };
}

describe("conventions common to all operations", () => {
	it("matches field names case-insensitively in every spelling", async () => {
		const { apikey, privatekey, campaignid } = await createApp();
		for (const body of [
			{ ApiKey: apikey, PrivateKey: privatekey, CampaignId: String(campaignid) },
			{ APIKEY: apikey, PRIVATEKEY: privatekey, campaignID: campaignid },
		]) {
			const res = await post("/saas/v1_0/getcampaigndata", JSON.stringify(body));
			expect(res.status).toBe(200);
			expect(res.body.campaignid).toBe(String(campaignid));
		}
	});

	it("matches the operation name case-insensitively", async () => {
		const { apikey, privatekey, campaignid } = await createApp();
		const res = await post("/saas/v1_0/GetCampaignData", JSON.stringify({ apikey, privatekey, campaignid }));
		expect(res.status).toBe(200);
	});

	it("URL-decodes request text once", async () => {
		const { apikey, privatekey, campaignid } = await createApp();
		// "%31" is "1": an encoded campaign id still finds the campaign.
		const encoded = [...String(campaignid)].map((d) => `%3${d}`).join("");
		const res = await post("/saas/v1_0/campaignterms", JSON.stringify({ apikey, privatekey, campaignid: encoded }));
		expect(res.status).toBe(200);
	});

	const badInputs: [string, () => Promise<{ status: number; body: any; contentType: string | null }>, number, string][] = [
		["malformed JSON", () => post("/saas/v1_0/getcampaigndata", "{not json"), 400, "invalid_json"],
		["a JSON array", () => post("/saas/v1_0/getcampaigndata", "[1,2]"), 400, "invalid_body"],
		["a JSON string", () => post("/saas/v1_0/getcampaigndata", '"hello"'), 400, "invalid_body"],
		["JSON null", () => post("/saas/v1_0/getcampaigndata", "null"), 400, "invalid_body"],
		["an empty body", () => post("/saas/v1_0/getcampaigndata", ""), 400, "invalid_json"],
		[
			"a form body",
			() => post("/saas/v1_0/getcampaigndata", "a=1", { "content-type": "application/x-www-form-urlencoded" }),
			415,
			"unsupported_media_type",
		],
		["no content type", () => post("/saas/v1_0/getcampaigndata", "{}", {}), 415, "unsupported_media_type"],
		["a body over 64 KiB", () => post("/saas/v1_0/getcampaigndata", JSON.stringify({ pad: "x".repeat(70_000) })), 413, "payload_too_large"],
		["an unknown operation", () => post("/saas/v1_0/transfermoney", "{}"), 404, "unknown_operation"],
		["an unknown path", () => post("/nowhere", "{}"), 404, "not_found"],
	];

	for (const [what, send, status, errorcode] of badInputs) {
		it(`answers ${what} with a JSON ${status} ${errorcode}`, async () => {
			const res = await send();
			expect(res.status).toBe(status);
			expect(res.contentType).toMatch(/application\/json/);
			expect(res.body).toMatchObject({ success: false, errorcode });
			expect(typeof res.body.message).toBe("string");
		});
	}

	it("answers a chunked body over 64 KiB (no content-length) with 413", async () => {
		const chunk = new TextEncoder().encode(`{"pad":"${"x".repeat(40_000)}`);
		const stream = new ReadableStream({
			start(controller) {
				controller.enqueue(chunk);
				controller.enqueue(chunk);
				controller.close();
			},
		});
		const res = await request("/saas/v1_0/getcampaigndata", {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: stream,
		});
		expect(res.status).toBe(413);
		expect(await res.json()).toMatchObject({ errorcode: "payload_too_large" });
	});

	it("answers a GET with a JSON 405 naming POST", async () => {
		const res = await request("/saas/v1_0/getcampaigndata");
		expect(res.status).toBe(405);
		expect(res.headers.get("allow")).toBe("POST");
		expect(await res.json()).toMatchObject({ success: false, errorcode: "method_not_allowed" });
	});

	it("has a health route", async () => {
		const res = await request("/health");
		expect(res.status).toBe(200);
		expect(await res.json()).toEqual({ success: true, message: "ok" });
	});

	it("changes nothing on a failed call", async () => {
		const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM apps").first<{ n: number }>();
		await post("/saas/v1_0/getcampaigndata", "{broken");
		const after = await env.DB.prepare("SELECT COUNT(*) AS n FROM apps").first<{ n: number }>();
		expect(after).toEqual(before);
	});
});
