-- Issue 34, leaderboards: an erased user's counters are deleted at the
-- erasure (src/db/privacy.ts), so a user's rank counts the rows ahead of it
-- on leaderboard_counts_rank alone, without reading each one's user. This
-- index finds a user's counters for that delete; the statement below removes
-- those of users erased before this migration.
CREATE INDEX leaderboard_counts_user ON leaderboard_counts(appid, userkey);
DELETE FROM leaderboard_counts WHERE EXISTS (
  SELECT 1 FROM users u WHERE u.userkey = leaderboard_counts.userkey AND u.appid = leaderboard_counts.appid AND u.erased_at IS NOT NULL
);

