import type { Operation } from "../http/operation";
import { campaignterms, getcampaigndata } from "./campaign";
import { applyreferrercode, validatereferrercode } from "./referrer";
import { register, updateuser } from "./users";

/** Every public operation by its lower-case name: the route `/saas/v1_0/<name>`. */
export const operations: Record<string, Operation> = {
	getcampaigndata,
	campaignterms,
	register,
	updateuser,
	applyreferrercode,
	validatereferrercode,
};
