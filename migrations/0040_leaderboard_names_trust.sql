-- Issue 47, a board that is safe to publish.
--
-- How a campaign's public board names its referrers (src/domain/display-name.ts):
-- "First L." (firstinitial, the default), initials, or "Referrer #n" (numbered).
ALTER TABLE campaigns ADD COLUMN leaderboardnames TEXT NOT NULL DEFAULT 'firstinitial';

-- Only friends whose rewards are neither Suspicious nor Rejected count now
-- (src/db/leaderboard.ts). The all-time counters of referrers holding a
-- Suspicious reward are counted again from the projected rewards under that
-- rule; the level and tie triggers of migration 0036 move with the UPDATE.
-- (The month and week counters cannot be recounted here: their ranges are
-- local to the app's time zone. Those of the current month and week may keep
-- a Suspicious friend counted until the period ends; docs/rewards.md.)
UPDATE leaderboard_counts SET
  friends = (
    SELECT COUNT(DISTINCT r.friend_userkey) FROM rewards r
    WHERE r.appid = leaderboard_counts.appid AND r.userkey = leaderboard_counts.userkey
      AND r.campaignid = leaderboard_counts.campaignid AND r.usertype = 'Referrer'
      AND r.friend_userkey IS NOT NULL AND r.friend_userkey <> ''
      AND r.rewardstatus NOT IN ('Rejected', 'Suspicious') AND r.reward > 0
  ),
  earned = (
    SELECT COALESCE(SUM(r.reward), 0) FROM rewards r
    WHERE r.appid = leaderboard_counts.appid AND r.userkey = leaderboard_counts.userkey
      AND r.campaignid = leaderboard_counts.campaignid AND r.usertype = 'Referrer'
      AND r.friend_userkey IS NOT NULL AND r.friend_userkey <> ''
      AND r.rewardstatus NOT IN ('Rejected', 'Suspicious')
  )
WHERE bucket = 'all' AND EXISTS (
  SELECT 1 FROM rewards s
  WHERE s.appid = leaderboard_counts.appid AND s.userkey = leaderboard_counts.userkey
    AND s.campaignid = leaderboard_counts.campaignid AND s.usertype = 'Referrer' AND s.rewardstatus = 'Suspicious'
);
