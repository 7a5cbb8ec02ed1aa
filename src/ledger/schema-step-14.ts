import type { LedgerStatement } from "./schema-step-12";

/**
 * Ledger schema step 14 (issue 49, pieces 2 and 3): the user's profile, one
 * row (profile.ts). `generation` counts the changes of the user since the
 * ledger began keeping it, so a profile read from D1 under an older
 * generation is not kept; `body` is the profile as JSON (null: none kept,
 * the next conversion reads D1 once). A ledger migrated to this step has no
 * row: every user written before the upgrade reads its profile from D1 at
 * its first conversion, with the statements the conversion ran before.
 */
export const PROFILE_STEP_14: readonly LedgerStatement[] = [
	"CREATE TABLE profile (one INTEGER PRIMARY KEY CHECK (one = 1), generation INTEGER NOT NULL, body TEXT)",
];
