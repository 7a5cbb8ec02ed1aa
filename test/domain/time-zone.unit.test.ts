import { describe, expect, it, vi } from "vitest";
import { isTimeZone, localDayStart, offsetMinutes, offsetSegments, slotOf } from "../../src/domain/time-zone";

describe("time zones of analytics", () => {
	it("puts an instant in its quarter-hour slot", () => {
		expect(slotOf("2026-03-29T00:59:59.999Z")).toBe("2026-03-29T00:45");
		expect(slotOf("2026-03-29T01:00:00.000Z")).toBe("2026-03-29T01:00");
	});

	it("knows IANA names and refuses others", () => {
		for (const zone of ["UTC", "Europe/Paris", "America/Los_Angeles", "Asia/Kathmandu"]) expect(isTimeZone(zone), zone).toBe(true);
		for (const zone of ["", "Mars/Olympus", "Europe/Paris; DROP", "+02:00x"]) expect(isTimeZone(zone), zone).toBe(false);
	});

	it("finds local midnight and the offsets, daylight saving included", () => {
		expect(offsetMinutes("Asia/Kathmandu", Date.parse("2026-01-01T00:00:00Z"))).toBe(345);
		expect(new Date(localDayStart("America/Los_Angeles", "2026-07-04")).toISOString()).toBe("2026-07-04T07:00:00.000Z");
		expect(new Date(localDayStart("America/Los_Angeles", "2026-01-04")).toISOString()).toBe("2026-01-04T08:00:00.000Z");
		expect(new Date(localDayStart("Asia/Kolkata", "2026-01-04")).toISOString()).toBe("2026-01-03T18:30:00.000Z");
		const start = localDayStart("Europe/Paris", "2026-03-28");
		const end = localDayStart("Europe/Paris", "2026-11-01");
		expect(offsetSegments("Europe/Paris", start, end)).toEqual([
			{ from: "2026-03-27T23:00", offsetMinutes: 60 },
			{ from: "2026-03-29T01:00", offsetMinutes: 120 },
			{ from: "2026-10-25T01:00", offsetMinutes: 60 },
		]);
		expect(offsetSegments("UTC", Date.parse("2026-01-01T00:00:00Z"), Date.parse("2027-01-01T00:00:00Z"))).toHaveLength(1);
	});

	it("answers UTC's offset, 0, without formatting the instant, as Intl answers for Etc/UTC", () => {
		const format = vi.spyOn(Intl.DateTimeFormat.prototype, "formatToParts");
		try {
			const instants = [0, Date.parse("2026-03-29T01:00:00Z"), Date.parse("2026-10-25T00:59:00Z"), Date.parse("2099-12-31T23:59:59Z")];
			for (const t of instants) expect(offsetMinutes("UTC", t)).toBe(0);
			expect(format).not.toHaveBeenCalled();
			for (const t of instants) expect(offsetMinutes("Etc/UTC", t)).toBe(0);
			expect(format).toHaveBeenCalled();
			// An instant no Date holds is refused as before.
			expect(() => offsetMinutes("UTC", Number.NaN)).toThrow(RangeError);
			expect(() => offsetMinutes("UTC", 8.64e15 + 1)).toThrow(RangeError);
		} finally {
			format.mockRestore();
		}
	});
});
