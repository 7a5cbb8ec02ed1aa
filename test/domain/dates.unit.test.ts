import { describe, expect, it } from "vitest";
import { formatCampaignStart, formatDayMonthYear, formatTimestamp } from "../../src/domain/dates";

describe("API date formats (UTC)", () => {
	it("formats rewardedon/regdate as d-Mon-yyyy", () => {
		expect(formatDayMonthYear("2017-03-02T23:59:00Z")).toBe("2-Mar-2017");
		expect(formatDayMonthYear("2026-11-21T00:00:00Z")).toBe("21-Nov-2026");
	});
	it("formats campaignstartdate with a 12-hour clock", () => {
		expect(formatCampaignStart("2026-11-21T22:05:00Z")).toBe("Nov 21, 2026 10:05 PM");
		expect(formatCampaignStart("2026-01-02T00:07:00Z")).toBe("Jan 2, 2026 12:07 AM");
		expect(formatCampaignStart("2026-01-02T12:00:00Z")).toBe("Jan 2, 2026 12:00 PM");
	});
	it("formats lastmodifieddate as yyyy-MM-dd HH:mm:ss", () => {
		expect(formatTimestamp("2026-11-21T22:05:09.123Z")).toBe("2026-11-21 22:05:09");
	});
});
