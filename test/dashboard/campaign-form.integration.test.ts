import { describe, expect, it } from "vitest";
import { rewardTypeAllows } from "../../src/rewards/rules";
import { admin, createApp } from "../support/api";
import { signIn } from "../support/dashboard";

/** The options of the select named `name`: [value, label, selected]. */
function options(html: string, name: string): [string, string, boolean][] {
	const select = new RegExp(`<select[^>]*name="${name}"[^>]*>([\\s\\S]*?)</select>`).exec(html)?.[1] ?? "";
	return [...select.matchAll(/<option value="([^"]*)"( selected="")?>([^<]*)<\/option>/g)].map((m) => [m[1] ?? "", m[3] ?? "", !!m[2]]);
}

describe("campaign form: reward type", { timeout: 30_000 }, () => {
	it("labels each reward type by who the rules engine rewards for that stored value", async () => {
		const session = await signIn();
		const app = await createApp({ rewardtype: 1 });
		const html = await (await session.get(`/dashboard/apps/${app.appid}/campaigns/${app.campaignid}`)).text();
		const found = options(html, "rewardtype");
		expect(found.map(([v]) => v)).toEqual(["0", "1", "2", "3"]);
		for (const [value, label] of found) {
			const referrer = rewardTypeAllows(Number(value), "Referrer");
			const friend = rewardTypeAllows(Number(value), "Friend");
			const expected = referrer && friend ? "both" : referrer ? "referrer only" : friend ? "friend only" : "none";
			expect(label, `rewardtype ${value}`).toContain(expected);
		}
		expect(found.find(([, , selected]) => selected)?.[1]).toContain("referrer only");
		expect((await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body.rewardtype).toBe(1);
	});
});
