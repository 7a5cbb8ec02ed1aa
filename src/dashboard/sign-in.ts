import { constantTimeEqual } from "../domain/crypto";
import { type AdminLimiters, countAdminFailure, refuseThrottledAdmin } from "../http/admin-throttle";
import { ApiError } from "../http/errors";

/**
 * The sign-in form's token check, under the same failed sign-in limit per
 * client IP as the admin API's bearer token (http/admin-throttle.ts): an
 * address over it is refused before the token is compared.
 */
export async function checkSignIn(
	env: AdminLimiters & { ADMIN_TOKEN?: string },
	ip: string,
	presented: string,
): Promise<"ok" | "wrong" | "throttled"> {
	try {
		refuseThrottledAdmin(ip);
		const token = env.ADMIN_TOKEN;
		if (token && constantTimeEqual(presented, token)) return "ok";
		await countAdminFailure(env, { ip, credential: presented });
		return "wrong";
	} catch (err) {
		if (err instanceof ApiError && err.status === 429) return "throttled";
		throw err;
	}
}
