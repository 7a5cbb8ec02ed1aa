import type { Operation } from "../http/operation";
import { getuserbalance } from "./balance";
import { campaignterms, getcampaigndata } from "./campaign";
import { registerconversionevent } from "./conversion";
import { getfriendsandrewards } from "./friends";
import { getleaderboard } from "./leaderboard";
import { invokeoutreach, remindfriend } from "./outreach";
import { applyreferrercode, validatereferrercode } from "./referrer";
import { reverseconversionevent } from "./reversal";
import { changerewardstatus, checkrewardstatus, redeemrewards } from "./rewards";
import { getsharepage } from "./share-page";
import { register, updateuser } from "./users";

/** Every public operation by its lower-case name: the route `/saas/v1_0/<name>`. */
export const operations: Record<string, Operation> = {
	getcampaigndata,
	campaignterms,
	register,
	updateuser,
	applyreferrercode,
	validatereferrercode,
	registerconversionevent,
	getuserbalance,
	getfriendsandrewards,
	redeemrewards,
	changerewardstatus,
	checkrewardstatus,
	invokeoutreach,
	remindfriend,
	getsharepage,
	reverseconversionevent,
	getleaderboard,
};
