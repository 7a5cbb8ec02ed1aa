import { describe, expect, it } from "vitest";
import { checkSignals } from "../../src/fraud/check";
import { domainLookup, isDisposableDomain } from "../../src/fraud/disposable";
import {
	canonicalEmail,
	commentWithSignals,
	DEFAULT_SIGNAL_SETTINGS,
	fraudSignals,
	NO_FACTS,
	type PersonFields,
	reviewSignals,
} from "../../src/fraud/signals";

const person = (over: Partial<PersonFields> = {}): PersonFields => ({ email: null, phone: null, paymentcustomerid: null, ...over });
const never = (_domain: string) => false;
const fire = (friend: PersonFields, referrer: PersonFields, facts = NO_FACTS, velocitythreshold = 20, disposable = never) =>
	fraudSignals(friend, referrer, facts, { velocitythreshold }, disposable);

describe("fraud signals", () => {
	it("canonical emails fold case, +tags and Gmail dots", () => {
		expect(canonicalEmail("Rita.Smith+ref@GoogleMail.com")).toBe("ritasmith@gmail.com");
		expect(canonicalEmail("rita.smith+x@example.com")).toBe("rita.smith@example.com");
	});

	it("email_alias: one mailbox behind an alias; a different mailbox at the same domain is a near miss", () => {
		expect(fire(person({ email: "r.ita+2@gmail.com" }), person({ email: "rita@gmail.com" }))).toEqual(["email_alias"]);
		expect(fire(person({ email: "rita2@gmail.com" }), person({ email: "rita@gmail.com" }))).toEqual([]);
		// Dots only fold for Gmail.
		expect(fire(person({ email: "r.ita@example.com" }), person({ email: "rita@example.com" }))).toEqual([]);
	});

	it("same_phone and same_payment_customer fire on equality only, never on two blanks", () => {
		expect(fire(person({ phone: "555" }), person({ phone: "555" }))).toEqual(["same_phone"]);
		expect(fire(person({ phone: "555" }), person({ phone: "5550" }))).toEqual([]);
		expect(fire(person({ paymentcustomerid: "cus_1" }), person({ paymentcustomerid: "cus_1" }))).toEqual(["same_payment_customer"]);
		expect(fire(person({ paymentcustomerid: "cus_1" }), person({ paymentcustomerid: "cus_2" }))).toEqual([]);
		expect(fire(person(), person())).toEqual([]);
	});

	it("same_device and same_ip come from the stored facts", () => {
		expect(fire(person(), person(), { ...NO_FACTS, sharedDevice: true })).toEqual(["same_device"]);
		expect(fire(person(), person(), { ...NO_FACTS, sharedNetwork: true })).toEqual(["same_ip"]);
	});

	it("disposable_email checks the friend's domain only", () => {
		const disposable = (domain: string) => domain === "mailinator.com";
		expect(fire(person({ email: "a@mailinator.com" }), person(), NO_FACTS, 20, disposable)).toEqual(["disposable_email"]);
		expect(fire(person({ email: "a@example.com" }), person({ email: "b@mailinator.com" }), NO_FACTS, 20, disposable)).toEqual([]);
	});

	it("velocity fires above the threshold, not at it, and 0 disables it", () => {
		expect(fire(person(), person(), { ...NO_FACTS, recentReferrals: 21 }, 20)).toEqual(["velocity"]);
		expect(fire(person(), person(), { ...NO_FACTS, recentReferrals: 20 }, 20)).toEqual([]);
		expect(fire(person(), person(), { ...NO_FACTS, recentReferrals: 500 }, 0)).toEqual([]);
		expect(fire(person(), person(), { ...NO_FACTS, recentReferrals: 2 }, 1)).toEqual(["velocity"]);
	});

	it("reports every signal that fired, in a fixed order", () => {
		const facts = { sharedDevice: true, sharedNetwork: true, recentReferrals: 99 };
		const same = person({ email: "x@example.com", phone: "1", paymentcustomerid: "c" });
		expect(fire(same, same, facts, 20, () => true)).toEqual([
			"email_alias",
			"same_phone",
			"same_payment_customer",
			"same_device",
			"same_ip",
			"disposable_email",
			"velocity",
		]);
	});
});

describe("review of the signals", () => {
	it("every signal makes a reward Suspicious by default", () => {
		const review = reviewSignals(["same_ip"], DEFAULT_SIGNAL_SETTINGS);
		expect(review).toEqual({
			signals: ["same_ip"],
			suspicious: true,
			comment: "Suspicious: friend and referrer were seen on the same network (same_ip).",
		});
	});

	it("signals left out of suspicioussignals only flag the reward", () => {
		const review = reviewSignals(["same_ip"], { suspicioussignals: ["same_device"] });
		expect(review.suspicious).toBe(false);
		expect(review.comment).toMatch(/^Flagged: .*same_ip/);
		expect(reviewSignals(["same_ip", "same_device"], { suspicioussignals: ["same_device"] }).suspicious).toBe(true);
		expect(reviewSignals([], { suspicioussignals: null })).toEqual({ signals: [], suspicious: false, comment: null });
	});

	it("a flag-only comment keeps the normal status's comment", () => {
		const flagged = reviewSignals(["velocity"], { suspicioussignals: [] });
		expect(commentWithSignals("On hold for 3 day(s).", flagged)).toMatch(/^Flagged: .*\(velocity\)\. On hold for 3 day\(s\)\.$/);
		expect(commentWithSignals(null, flagged)).toBe(flagged.comment);
		expect(commentWithSignals("Awaiting review.", reviewSignals([], { suspicioussignals: null }))).toBe("Awaiting review.");
	});
});

describe("disposable domains (disposable-email-domains)", () => {
	it("knows listed domains and their wildcard subdomains, not look-alikes", () => {
		expect(isDisposableDomain("mailinator.com")).toBe(true);
		expect(isDisposableDomain("MAILINATOR.COM")).toBe(true);
		expect(isDisposableDomain("33mail.com")).toBe(true);
		expect(isDisposableDomain("anything.33mail.com")).toBe(true);
		expect(isDisposableDomain("xmailinator.com")).toBe(false);
		expect(isDisposableDomain("mailinator.com.au")).toBe(false);
		expect(isDisposableDomain("gmail.com")).toBe(false);
		expect(isDisposableDomain("example.com")).toBe(false);
	});

	it("domainLookup: a binary search over a sorted list answers as a Set of it would, and any other list gets a Set", () => {
		const sorted = ["a.example", "b.example", "c.example", "mail.test", "z.example"];
		const lookup = domainLookup(sorted);
		for (const name of sorted) expect(lookup(name)).toBe(true);
		for (const name of ["", "a", "a.exampl", "a.examplf", "d.example", "zz.example", "Z.EXAMPLE", "mail.test."])
			expect(lookup(name)).toBe(false);
		expect(domainLookup([])("a.example")).toBe(false);
		// Out of order or repeated: the same answers (a Set), never a search that misses.
		for (const list of [
			["b.example", "a.example", "c.example"],
			["a.example", "a.example", "b.example"],
		]) {
			const other = domainLookup(list);
			for (const name of list) expect(other(name)).toBe(true);
			expect(other("d.example")).toBe(false);
		}
		expect(() => domainLookup({ length: 1 })).toThrow(/not an array/);
		expect(() => domainLookup(["a.example", 7])).toThrow(/entry 1 is not a string/);
	});

	it("checkSignals uses the list and the campaign's settings", () => {
		const friend = person({ email: "x@mailinator.com" });
		expect(checkSignals(friend, person(), DEFAULT_SIGNAL_SETTINGS)).toMatchObject({ signals: ["disposable_email"], suspicious: true });
		expect(checkSignals(friend, person(), { suspicioussignals: [], velocitythreshold: 20 }).suspicious).toBe(false);
	});
});
