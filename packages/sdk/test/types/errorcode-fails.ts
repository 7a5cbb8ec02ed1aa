// Compiled by test/errorcode-types.unit.test.ts, which expects tsc to REFUSE it: the unknown literal below.
import type { ErrorCode } from "../../src/index.js";

export const typo: ErrorCode = "insuficient_balance";
