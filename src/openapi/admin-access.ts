import { z } from "zod";
import { restoreSchema } from "../admin/ledger-restore";
import { createMemberSchema, updateMemberSchema } from "../admin/members";
import { createTokenSchema } from "../admin/tokens";
import { ROLES } from "../db/admin-tokens";
import { ACTOR_TYPES } from "../db/audit";
import type { AdminRoute } from "./admin-route";

/** The admin API's access routes (docs/operators.md): tokens, members and the audit log. */

const tokenView = z.object({
	tokenid: z.string(),
	name: z.string(),
	role: z.enum(ROLES),
	createdat: z.string(),
	revokedat: z.string().nullable(),
});
const memberView = z.object({
	memberid: z.string(),
	email: z.string(),
	role: z.enum(ROLES),
	state: z
		.enum(["invited", "accepted", "expired"])
		.describe("accepted once the member's own invitation was; invited until then, expired when its invitation expired unused"),
	createdat: z.string(),
	acceptedat: z.string().nullable(),
	passkeys: z
		.number()
		.describe("How many passkeys the member has registered (0 until accepted): who is ready before requiring passkeys (docs/operators.md)"),
});
const auditEntry = z.object({
	seq: z.number(),
	entryid: z.string(),
	at: z.string(),
	actortype: z.enum(ACTOR_TYPES),
	actorid: z.string().nullable().describe("memberid, tokenid or apikey; null for the superuser"),
	actor: z.string().describe("The member's email, the token's name, the apikey, or superuser"),
	action: z.string().describe("e.g. app.update, campaign.update, reward.status, reward.reverse, balance.redeem, member.add"),
	targettype: z.string(),
	targetid: z.string().nullable(),
	changes: z
		.record(z.string(), z.object({ before: z.unknown(), after: z.unknown() }))
		.describe("Secrets never: a rotated key shows (secret)"),
});

const shardView = z.object({
	shard: z.number(),
	binding: z.string().describe("SHARD_<n>"),
	identityok: z
		.boolean()
		.describe("The database says it is this shard of this many by this hash (false: a binding points at another database)"),
	identity: z.object({ shard: z.number(), shardcount: z.number().nullable(), hash: z.string().nullable() }).nullable(),
	migrations: z.number().describe("Shard migrations applied (migrations-shard/)"),
	lastmigration: z.string().nullable(),
});

export const accessApi: AdminRoute[] = [
	{
		method: "get",
		path: "/shards",
		summary:
			"The D1 shard pool as this Worker routes by it (superuser only; docs/scaling.md, issue 50): the shard count and hash, each shard's identity and schema version. 503 service_busy when a shard does not answer",
		status: 200,
		response: z.object({ shardcount: z.number(), hash: z.string(), shards: z.array(shardView) }),
	},
	{
		method: "get",
		path: "/shards/{shard}",
		summary: "One D1 shard's identity and schema version (superuser only); only this shard is asked",
		errors: { "404": "no such shard (not_found)" },
		status: 200,
		response: shardView.extend({ shardcount: z.number(), hash: z.string() }),
	},
	{
		method: "post",
		path: "/apps/{appid}/users/{userkey}/payouts/retry",
		summary: "Pay again the user's approved Stripe rewards still unpaid (after Stripe refused, or the customer was fixed in Stripe)",
		status: 202,
		response: z.object({ userkey: z.string(), queued: z.number() }),
	},
	{
		method: "post",
		path: "/apps/{appid}/users/{userkey}/ledger:restore",
		summary:
			"Restore the user's ledger (rewards, balance) by Durable Objects point-in-time recovery to `at` (within the last 30 days) or to a `bookmark` (an earlier restore's `undobookmark`), then bring D1's projection in line (superuser only; docs/deploy.md). 501 restore_unavailable where the runtime has no point-in-time recovery (local dev)",
		body: restoreSchema,
		status: 200,
		response: z.object({
			userkey: z.string(),
			at: z.string().nullable(),
			restoredto: z.string(),
			undobookmark: z.string(),
			rewards: z.number(),
			forgottenrewards: z.number(),
			reerased: z.number(),
		}),
	},
	{
		method: "post",
		path: "/apps/{appid}/tokens",
		summary: "Create an app-scoped admin token with a role (owner); the token is shown only here",
		body: createTokenSchema,
		status: 201,
		response: tokenView.extend({ token: z.string() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/tokens",
		summary: "The app's admin tokens, newest first, without secrets (owner)",
		status: 200,
		response: z.object({ tokens: z.array(tokenView) }),
	},
	{
		method: "delete",
		path: "/apps/{appid}/tokens/{tokenid}",
		summary: "Revoke a token at once (owner)",
		status: 200,
		response: z.object({ revoked: z.boolean() }),
	},
	{
		method: "post",
		path: "/apps/{appid}/members",
		summary:
			"Add a member with a role (owner): the invitation (valid 7 days, one use) is emailed to the address, never answered; the same answer whether or not the person exists",
		body: createMemberSchema,
		status: 201,
		response: memberView,
	},
	{
		method: "get",
		path: "/apps/{appid}/members",
		summary: "The app's members, oldest first (owner)",
		status: 200,
		response: z.object({ members: z.array(memberView) }),
	},
	{
		method: "patch",
		path: "/apps/{appid}/members/{memberid}",
		summary: "Change a member's role (owner)",
		body: updateMemberSchema,
		status: 200,
		response: memberView,
	},
	{
		method: "delete",
		path: "/apps/{appid}/members/{memberid}",
		summary: "Remove a member: their sessions lose this app at once, and keep the person's other apps (owner)",
		status: 200,
		response: z.object({ removed: z.boolean() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/audit",
		summary: "The audit log, newest first: every change through the admin API and the dashboard, and the public API's money decisions",
		query: {
			limit: z.number().int().min(1).max(200).default(50),
			cursor: z.string().optional(),
			action: z.string().optional(),
			actor: z.string().optional(),
			targettype: z.string().optional(),
			targetid: z.string().optional(),
		},
		status: 200,
		response: z.object({ entries: z.array(auditEntry), nextcursor: z.string().nullable() }),
	},
];
