import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";

describe("getcampaigndata", () => {
	it("returns the campaign with encoded texts, numeric rule campaign ids and ordered social actions", async () => {
		const { api, appid, campaignid } = await createApp();
		const { status, body } = await api("getcampaigndata", { campaignid: String(campaignid) });
		expect(status).toBe(200);
		expect(body).toMatchObject({
			success: true,
			appid,
			campaignid: String(campaignid),
			campaignname: "Give $10, get $10",
			offertitle: "Give+%2410+%26+get+%2410%21",
			offerdescription: "Invite+friends%3A+100%25+of+them+get+%2410.",
			campaignbgcolor: "#112233",
			campaignstartdate: "Nov 21, 2026 10:05 PM",
			widgetfont: "Inter",
			customdomain: "",
			rewardtype: "3",
		});
		expect(body.lastmodifieddate).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
		expect(body.rewardrules).toEqual([
			expect.objectContaining({ campaignid, rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }),
			expect.objectContaining({
				campaignid,
				rewardusertype: "Friend",
				// A Signup rule sent without a frequency pays once per friend (docs/rewards.md).
				rewardfrequency: 1,
				mintranvalue: 0,
				maxrewardamount: 0,
				categories: null,
				inclusionsandexclusions: [],
			}),
		]);
		expect(body.socialactions.map((a: { socialactionname: string }) => a.socialactionname)).toEqual(["Facebook", "Mail"]);
		expect(body.socialactions[1]).toMatchObject({
			socialactionid: "5",
			displayorder: "2",
			sharemessagetype: 0,
			sharemessage: "Join+me%3A+SHARE_URL+%28code+SHARE_CODE%29",
		});
		expect(typeof body.socialactions[1].campaignsocialactionid).toBe("string");
	});

	it("accepts the campaign id as a number and as campaignId", async () => {
		const { api, campaignid } = await createApp();
		expect((await api("getcampaigndata", { campaignid })).body.campaignid).toBe(String(campaignid));
		expect((await api("getcampaigndata", { campaignId: String(campaignid) })).body.campaignid).toBe(String(campaignid));
	});

	it("is 404 for a campaign of another app and for an unknown one", async () => {
		const mine = await createApp();
		const theirs = await createApp();
		for (const campaignid of [theirs.campaignid, 999999]) {
			const { status, body } = await mine.api("getcampaigndata", { campaignid: String(campaignid) });
			expect(status).toBe(404);
			expect(body).toMatchObject({ success: false, errorcode: "campaign_not_found" });
		}
	});

	it("rejects a missing or non-numeric campaign id naming the field", async () => {
		const { api } = await createApp();
		for (const body of [{}, { campaignid: "abc" }, { campaignid: "" }]) {
			const res = await api("getcampaigndata", body);
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ success: false, errorcode: "validation_failed", fields: ["campaignid"] });
		}
	});

	it("shows a campaign update in lastmodifieddate and the new texts", async () => {
		const { api, appid, campaignid } = await createApp();
		const updated = await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, { offertitle: "New title" });
		expect(updated.status).toBe(200);
		const { body } = await api("getcampaigndata", { campaignid });
		expect(body.offertitle).toBe("New+title");
		expect(body.rewardrules).toHaveLength(2);
	});
});

describe("campaignterms", () => {
	it("returns the terms form-URL-encoded in message", async () => {
		const { api, campaignid } = await createApp();
		const { status, body } = await api("campaignterms", { campaignid: String(campaignid) });
		expect(status).toBe(200);
		expect(body).toEqual({ success: true, message: "Rewards+expire+after+1+year+%26+can%27t+be+combined." });
		expect(decodeURIComponent(body.message.replace(/\+/g, " "))).toBe("Rewards expire after 1 year & can't be combined.");
	});

	it("is 404 for a campaign of another app", async () => {
		const mine = await createApp();
		const theirs = await createApp();
		const { status, body } = await mine.api("campaignterms", { campaignid: String(theirs.campaignid) });
		expect(status).toBe(404);
		expect(body.errorcode).toBe("campaign_not_found");
	});
});
