import { describe, expect, it } from "vitest";
import { disputeStateOf, isDisputeEvent } from "../../src/integrations/stripe/disputes";

/** What a Stripe dispute event says of its dispute (docs/stripe.md "Disputes"). */
describe("disputeStateOf", () => {
	it("reads created as open, closed lost as lost, any other close as won", () => {
		expect(disputeStateOf("charge.dispute.created", "needs_response")).toBe("open");
		expect(disputeStateOf("charge.dispute.created", "lost")).toBe("open");
		expect(disputeStateOf("charge.dispute.closed", "lost")).toBe("lost");
		expect(disputeStateOf("charge.dispute.closed", "won")).toBe("won");
		// An inquiry that closed without becoming a chargeback: the payment stays.
		expect(disputeStateOf("charge.dispute.closed", "warning_closed")).toBe("won");
		expect(disputeStateOf("charge.dispute.closed", null)).toBe("won");
	});

	it("knows the two dispute events it handles", () => {
		expect(isDisputeEvent("charge.dispute.created")).toBe(true);
		expect(isDisputeEvent("charge.dispute.closed")).toBe(true);
		expect(isDisputeEvent("charge.dispute.updated")).toBe(false);
	});
});
