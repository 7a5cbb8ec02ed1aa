import { describe, expect, it } from "vitest";
import { outreachEmail, reminderEmail } from "../../src/outbox/emails";
import { encodeWords, formatMailbox, headerText, renderHeaders } from "../../src/outbox/mail-headers";

/** The header names of a rendered header block, one per line. */
const headerNames = (block: string) => block.split("\r\n").map((line) => line.split(":")[0]);

describe("email headers", () => {
	it("headerText makes one line of any value", () => {
		expect(headerText("Eve\r\nBcc: victim@evil.test")).toBe("Eve Bcc: victim@evil.test");
		expect(headerText("a\u0000b\u0085c\u2028d\ud800")).toBe("a b c d");
		expect(headerText("x".repeat(500))).toHaveLength(200);
	});
	it("quotes ASCII names and encodes others per RFC 2047", () => {
		expect(formatMailbox('Ann "A" Lee', "ann@example.com")).toBe('"Ann \\"A\\" Lee" <ann@example.com>');
		expect(formatMailbox("Zoë", "z@example.com")).toBe("=?UTF-8?B?Wm/Dqw==?= <z@example.com>");
		const long = encodeWords("é".repeat(100));
		expect(long.split(" ").every((word) => word.length <= 75 && /^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/.test(word))).toBe(true);
	});
	it("a CR/LF name or title cannot add a header to a rendered email", () => {
		const campaign = { offertitle: "Offer\r\nBcc: list@evil.test", offerdescription: "", campaignname: "c" };
		const outreach = outreachEmail({
			to: "eve@example.com",
			toName: "Eve\r\nBcc: victim@evil.test",
			campaign,
			mailMessage: null,
			shareurl: "https://s/r/X",
			referralcode: "X",
		});
		const reminder = reminderEmail({
			to: "f@example.com",
			toName: "F\nCc: x@evil.test",
			referrerName: "Mallory\r\nBcc: victim@evil.test",
			campaign,
			message: null,
			landingurl: null,
		});
		for (const email of [outreach, reminder]) {
			const block = renderHeaders({ from: "r@example.com", to: email.to, toName: email.toName, subject: email.subject });
			expect(headerNames(block)).toEqual(["From", "To", "Subject"]);
			expect(`${email.toName}${email.subject}`).not.toMatch(/[\r\n]/);
		}
	});
});
