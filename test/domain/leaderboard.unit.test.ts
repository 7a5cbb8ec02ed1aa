import { describe, expect, it } from "vitest";
import { displayName } from "../../src/domain/display-name";
import { bucketOf, bucketsOf, rankBoard } from "../../src/domain/leaderboard";

const at = (iso: string) => Date.parse(iso);

describe("leaderboard buckets", () => {
	it("puts an instant in its local week (Monday first) and month, with the UTC range of each", () => {
		// Sunday 22 November 23:30 UTC is Monday 23 November 00:30 in Paris (UTC+1).
		expect(bucketOf("week", "Europe/Paris", at("2026-11-22T23:30:00Z"))).toEqual({
			key: "week:2026-11-23",
			from: "2026-11-22T23:00:00.000Z",
			to: "2026-11-29T23:00:00.000Z",
		});
		expect(bucketOf("week", "Europe/Paris", at("2026-11-22T22:59:59Z")).key).toBe("week:2026-11-16");
		expect(bucketOf("week", "UTC", at("2026-11-22T23:30:00Z")).key).toBe("week:2026-11-16");
		// Saturday 31 October 23:30 UTC is 1 November 00:30 in Paris: November there, October in UTC.
		expect(bucketOf("month", "Europe/Paris", at("2026-10-31T23:30:00Z"))).toEqual({
			key: "month:2026-11",
			from: "2026-10-31T23:00:00.000Z",
			to: "2026-11-30T23:00:00.000Z",
		});
		expect(bucketOf("month", "UTC", at("2026-10-31T23:30:00Z")).key).toBe("month:2026-10");
	});

	it("follows daylight saving: a week and a month that change offset, and December into January", () => {
		// New York leaves daylight time on 1 November 2026: October starts at 04:00Z, November at 04:00Z, December at 05:00Z.
		expect(bucketOf("month", "America/New_York", at("2026-11-15T12:00:00Z"))).toEqual({
			key: "month:2026-11",
			from: "2026-11-01T04:00:00.000Z",
			to: "2026-12-01T05:00:00.000Z",
		});
		expect(bucketOf("week", "America/New_York", at("2026-11-01T12:00:00Z"))).toEqual({
			key: "week:2026-10-26",
			from: "2026-10-26T04:00:00.000Z",
			to: "2026-11-02T05:00:00.000Z",
		});
		expect(bucketOf("month", "UTC", at("2026-12-31T23:59:59Z"))).toEqual({
			key: "month:2026-12",
			from: "2026-12-01T00:00:00.000Z",
			to: "2027-01-01T00:00:00.000Z",
		});
		// A week across the year's end starts on its Monday in December.
		expect(bucketOf("week", "UTC", at("2027-01-01T10:00:00Z")).key).toBe("week:2026-12-28");
	});

	it("counts a reward in all time, its month and its week", () => {
		expect(bucketsOf("UTC", "2026-11-26T12:00:00.000Z").map((b) => b.key)).toEqual(["all", "month:2026-11", "week:2026-11-23"]);
		expect(bucketOf("all", "UTC", 0)).toEqual({ key: "all", from: "", to: "~" });
	});
});

describe("display names", () => {
	it("shows the first name and the initial of the last, or 'A referrer'", () => {
		expect(displayName("Ann Lee")).toBe("Ann L.");
		expect(displayName("  Ann   Marie  lee ")).toBe("Ann L.");
		expect(displayName("Cher")).toBe("Cher");
		expect(displayName("Élodie émile")).toBe("Élodie É.");
		expect(displayName("Zoë 𝒜bc")).toBe("Zoë 𝒜.");
		expect(displayName("")).toBe("A referrer");
		expect(displayName("   ")).toBe("A referrer");
		expect(displayName(null)).toBe("A referrer");
	});

	it("numbers rows from 1 and rounds earned to hundredths", () => {
		expect(rankBoard([{ userkey: "u1", name: "Ann Lee", friends: 3, earned: 0.1 + 0.2 }])).toEqual([
			{ rank: 1, userkey: "u1", displayname: "Ann L.", friendsconverted: 3, earned: 0.3 },
		]);
	});
});
