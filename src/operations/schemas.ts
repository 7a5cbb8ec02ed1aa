import { z } from "zod";
import { PROFILE_FIELDS, type Profile } from "../db/users";
import { flag, id, optionalEmail, optionalId, optionalIpAddress, optionalPhone, optionalText } from "../http/fields";
import type { SettableStatus } from "../ledger/types";

/**
 * Request schemas that operations share with the admin API (and so with the
 * OpenAPI document), here so that neither imports the other: this module
 * holds schemas (and profileOf, which reads their output) and imports no
 * operation.
 */

/** Profile fields of register and updateuser (URL-decoded already). */
export const profileFields = {
	email: optionalEmail,
	useraccountid: optionalId,
	name: optionalText(200),
	phone: optionalPhone,
	profileimage: optionalText(2000),
	city: optionalText(100),
	state: optionalText(100),
	country: optionalText(100),
	paymentcustomerid: optionalId,
	usertimezone: optionalText(64),
	extrainfo: optionalText(4000),
	isexistinguser: flag,
};

/** The end user's device and network, as the product saw them (register, updateuser, invokeoutreach). */
export const networkFields = {
	deviceid: optionalText(200),
	ipaddress: optionalIpAddress,
	useragent: optionalText(1000),
};

/** Picks the profile fields that were sent. */
export function profileOf(input: Partial<Record<keyof typeof profileFields, unknown>>): Profile {
	const profile: Profile = {};
	for (const field of PROFILE_FIELDS) {
		const value = input[field];
		if (typeof value === "string") profile[field] = value;
	}
	if (typeof input.isexistinguser === "boolean") profile.isexistinguser = input.isexistinguser;
	return profile;
}

/** `Under Review` is the spec's input spelling; any case and spacing is accepted. */
const settableStatus = z
	.string()
	.transform((v) => v.replace(/\s+/g, "").toLowerCase())
	.pipe(z.enum(["approved", "rejected", "suspicious", "underreview"], { error: "must be Approved, Rejected, Suspicious or Under Review" }))
	.transform((v): SettableStatus => (v === "underreview" ? "UnderReview" : ((v[0]?.toUpperCase() + v.slice(1)) as SettableStatus)));

/** The entries of a status change (changerewardstatus's `rewardslist`, the admin API's `changes`). */
export const statusChangesSchema = z
	.array(z.object({ rewarddtlid: id, rewardstatus: settableStatus, message: optionalText(1000) }))
	.min(1, "must hold at least one entry")
	.max(100, "at most 100 entries per call")
	.refine((list) => new Set(list.map((e) => e.rewarddtlid)).size === list.length, "names a reward twice");
