import type { User } from "../db/users";
import type { OperationContext } from "../http/operation";
import type { FriendRecord } from "../ledger/friends";
import { ledgerFor } from "../ledger/stub";

/**
 * The friend in its referrer's ledger (issue 49 piece 4, ledger/friends.ts):
 * ONE ledger call, in the step that wrote the attribution to D1, right after
 * D1's batch decided it (register with a code, applyreferrercode, promotion
 * codes; imports call the ledger per referrer the same way). `referrer.friendsCount`
 * is D1's count read before this attribution: 0 tells a ledger that never
 * kept a friend that it has nothing to fill from D1. A ledger call that fails
 * after D1's write does not fail the attribution (D1 holds it): it is tried
 * again once in the background, and the friend is written again by its
 * conversion, a profile change or the share page's repair
 * (ledger/friends-fill.ts; docs/scaling.md names what is left).
 */
export async function rememberFriend(
	ctx: Pick<OperationContext, "env" | "app" | "waitUntil">,
	referrer: Pick<User, "userkey" | "friendsCount">,
	friend: FriendRecord,
): Promise<void> {
	const { env, app } = ctx;
	const write = () =>
		ledgerFor(env, app.appid, referrer.userkey).rememberFriends(app.appid, referrer.userkey, [friend], "attributed", referrer.friendsCount);
	try {
		await write();
	} catch (error) {
		console.error("attribution: the referrer's ledger did not keep the friend; trying again", error);
		ctx.waitUntil(
			write().then(
				() => undefined,
				(again: unknown) => console.error("attribution: the friend is not in the referrer's ledger", again),
			),
		);
	}
}
