import { describe, expect, it } from "vitest";
import { funnelOf } from "../../src/domain/stats";

// Issue 32: funnel rates never pass 100 %. Friends sign up with a typed code
// and no click, and convert in a range after signing up before it, so a step
// can count more people than the step before it.

describe("funnel rates", () => {
	it("the previous step's share when it is the larger, as before", () => {
		expect(funnelOf({ clicks: 10, referredsignups: 4, conversions: 1 })).toEqual({
			clicks: 10,
			signups: 4,
			conversions: 1,
			signuprate: 0.4,
			conversionrate: 0.25,
			clickconversionrate: 0.1,
		});
	});

	it("never above 1 when a step counts more than the one before it", () => {
		const funnel = funnelOf({ clicks: 1, referredsignups: 2, conversions: 3 });
		expect(funnel).toMatchObject({ signuprate: 1, conversionrate: 1, clickconversionrate: 1 });
		expect(funnelOf({ clicks: 0, referredsignups: 2, conversions: 1 })).toMatchObject({ signuprate: 1, conversionrate: 0.5 });
	});

	it("null when nothing happened", () => {
		expect(funnelOf({ clicks: 0, referredsignups: 0, conversions: 0 })).toMatchObject({
			signuprate: null,
			conversionrate: null,
			clickconversionrate: null,
		});
	});
});
