import { webhookUrlPolicy, webhookUrlProblem } from "../domain/webhook-url";
import { ApiError } from "../http/errors";
import type { AdminContext } from "./principal";

/** Refuses (400 `validation_failed`, field `webhookurl`) a webhook URL the policy of src/domain/webhook-url.ts does not allow. */
export function requireAllowedWebhookUrl(c: AdminContext, webhookurl: string | null | undefined): void {
	if (!webhookurl) return;
	const problem = webhookUrlProblem(webhookurl, webhookUrlPolicy(c.env, c.req.url));
	if (problem) throw new ApiError(400, "validation_failed", `Invalid request. webhookurl: ${problem}`, { fields: ["webhookurl"] });
}
