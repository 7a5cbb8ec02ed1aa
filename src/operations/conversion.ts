import { defineOperation } from "../http/operation";
import { conversionSchema, recordConversionEvent } from "./conversion-work";
import { valueOrThrow } from "./work";

/**
 * Operation 13: records a conversion event once per (app, customid) and
 * grants the rewards it earns (conversion-work.ts); its outcome is answered
 * as the response, a failure as the error it stands for.
 */
export const registerconversionevent = defineOperation({
	mutating: true,
	schema: conversionSchema,
	async handle(ctx, input) {
		return valueOrThrow(await recordConversionEvent(ctx, input));
	},
});
