import type { LedgerStatement } from "./schema-step-12";

/**
 * Ledger schema step 15 (issue 49 piece 4): the referrer's friends, what
 * getfriendsandrewards and the share page's counts read instead of D1
 * (friends.ts). One row per friend, WITHOUT ROWID on its userkey (the key
 * every writer knows: attribution, a conversion, a profile change, an
 * erasure), paged newest first by its D1 userid through `friends_page` (the
 * order D1's page had). The counts and the fill from D1 live in `meta`
 * ('friends'). Step 14 is left to the friend's profile (piece 2, another
 * branch).
 */
export const FRIENDS_STEP_15: readonly LedgerStatement[] = [
	`CREATE TABLE friends (
		userkey TEXT PRIMARY KEY,
		userid INTEGER NOT NULL,
		email TEXT,
		useraccountid TEXT,
		name TEXT,
		profileimage TEXT,
		status TEXT NOT NULL,
		registered_at TEXT NOT NULL,
		attributed_at TEXT,
		erased_at TEXT
	) WITHOUT ROWID`,
	`CREATE INDEX friends_page ON friends(userid)`,
];
