// Type test of ReferralError.errorcode (test/errorcode-types.unit.test.ts compiles it with tsc):
// documented codes narrow, a misspelt one does not compile, a code a newer service adds is still
// representable. Every `@ts-expect-error` below must be needed, or tsc fails.
import { type ErrorCode, type KnownErrorCode, ReferralError } from "../../src/index.js";

const error = new ReferralError(409, { success: false, errorcode: "insufficient_balance", message: "x" });

if (error.is("insufficient_balance") || error.is("network_error")) console.log(error.requestid, error.docs);
// @ts-expect-error a misspelt code is no error code
if (error.is("insuficient_balance")) throw error;

// @ts-expect-error an unknown literal is not an ErrorCode
const typo: ErrorCode = "reward_lockd";

switch (error.errorcode) {
	case "rate_limited":
	case "service_busy":
		break;
	default: {
		// A code from a newer service (or any other) is still a string to log.
		const logged: string = error.errorcode;
		console.log(logged);
	}
}

const known: KnownErrorCode = "user_erased";
const code: ErrorCode = known;

export { code, typo };
