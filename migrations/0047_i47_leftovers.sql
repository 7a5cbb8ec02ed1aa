-- Issue 47's leftovers (its review).
--
-- Password resets expired are purged by the every-minute job
-- (src/cleanup.ts, purgePasswordResets): they can no longer be used and the
-- cap of migration 0041 counts only unexpired ones, so without the purge the
-- table grew by one row per reset request for ever. The job deletes in
-- chunks of the oldest expiries, a range of this index.
CREATE INDEX password_resets_expiry ON password_resets(expires_at);

-- Stripe cases (migration 0042) name a user and a Stripe customer: the
-- user's erasure deletes those naming its userkey or its customer
-- (src/db/stripe-identity.ts, deleteStripeCasesOf), a seek of each index.
CREATE INDEX stripe_cases_user ON stripe_cases(appid, userkey) WHERE userkey IS NOT NULL;
CREATE INDEX stripe_cases_customer ON stripe_cases(appid, customer) WHERE customer IS NOT NULL;

-- The month and week leaderboard counters that migration 0040 could not
-- recount (their ranges are local to each app's time zone, which SQLite
-- cannot compute): every app with counters is queued here, and the
-- every-minute job leaderboard-recount (src/operations/leaderboard-recount.ts)
-- recounts its current month's and week's counters from the projected
-- rewards under the rule of 0040 (neither Suspicious nor Rejected), a chunk
-- of the app's counters at a time in key order from `after_userkey`, and
-- deletes the app's row when it reaches the end. Only the current periods
-- are ever read (getleaderboard, the admin board, the share page's rank).
CREATE TABLE leaderboard_recounts (
	appid TEXT PRIMARY KEY,
	-- The last userkey whose counters were recounted ('' before the first chunk).
	after_userkey TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
INSERT INTO leaderboard_recounts (appid)
	SELECT appid FROM apps WHERE EXISTS (SELECT 1 FROM leaderboard_counts c WHERE c.appid = apps.appid);
