-- Issue 34, leaderboards: a user's rank without counting its ties row by row.
-- A rank is 1 + the referrers with more friends (leaderboard_levels,
-- migration 0030) + its ties: the referrers at the same count who reached it
-- first (reached_at, then userkey). Counting those ties on
-- leaderboard_counts_rank read one index entry per tie: 90,000 for the last
-- of a launch where most referrers brought one friend.
--
-- leaderboard_ties counts the referrers of a board at each count by slices
-- of their reached_at: its first `width` characters, for each width of
-- leaderboard_tie_widths (4, 7, 10, 13, 16, 19: the year, month, day, hour,
-- minute and second of the ISO time; `above` is the width before). A
-- referrer is in one slice of each width. The ties ahead of a user are, per
-- width, the slices of its count inside its own slice of the width above
-- that sort before its own (at most the earlier years, 11 months, 30 days,
-- 23 hours, 59 minutes, 59 seconds), plus the ties in its own second,
-- counted on the index (src/db/leaderboard-ties.ts). Comparing prefixes
-- compares the texts, so the split is exact for any text in reached_at.
--
-- Triggers on leaderboard_counts keep it, as they keep leaderboard_levels:
-- every write of a counter (the flush's version-guarded upserts, reversals,
-- an erasure's delete, test and bench data) moves it in the same statement,
-- so it moves exactly when and as the counters do. A slice a referrer
-- leaves is deleted once empty, in the same statement (36 seeks of the
-- primary key: the widths times the slices), so the table holds at most six
-- rows per counter row, whatever the history. The statement after the
-- tables counts the counters already there.
CREATE TABLE leaderboard_tie_widths (
  width INTEGER PRIMARY KEY,
  above INTEGER NOT NULL
);
INSERT INTO leaderboard_tie_widths (width, above) VALUES (4, 0), (7, 4), (10, 7), (13, 10), (16, 13), (19, 16);

CREATE TABLE leaderboard_ties (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  friends INTEGER NOT NULL,
  width INTEGER NOT NULL,
  slice TEXT NOT NULL,
  referrers INTEGER NOT NULL,
  PRIMARY KEY (appid, campaignid, bucket, friends, width, slice)
) WITHOUT ROWID;

INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
  SELECT c.appid, c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width), COUNT(*)
  FROM leaderboard_counts c, leaderboard_tie_widths w
  WHERE c.friends > 0
  GROUP BY c.appid, c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width);

CREATE TRIGGER leaderboard_ties_insert AFTER INSERT ON leaderboard_counts WHEN NEW.friends > 0 BEGIN
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, w.width, substr(NEW.reached_at, 1, w.width), 1
    FROM leaderboard_tie_widths w
    WHERE true
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
END;

CREATE TRIGGER leaderboard_ties_delete AFTER DELETE ON leaderboard_counts WHEN OLD.friends > 0 BEGIN
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT OLD.appid, OLD.campaignid, OLD.bucket, OLD.friends, w.width, substr(OLD.reached_at, 1, w.width), -1
    FROM leaderboard_tie_widths w
    WHERE true
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  DELETE FROM leaderboard_ties WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends
    AND width IN (SELECT width FROM leaderboard_tie_widths) AND slice IN (SELECT substr(OLD.reached_at, 1, width) FROM leaderboard_tie_widths)
    AND referrers = 0;
END;

-- A change of count or of reached_at (the flush raises both together; a decrease keeps reached_at): out of the old
-- slices, into the new ones (a slice both left and entered nets to 0).
CREATE TRIGGER leaderboard_ties_update AFTER UPDATE OF friends, reached_at ON leaderboard_counts
  WHEN OLD.friends <> NEW.friends OR OLD.reached_at IS NOT NEW.reached_at BEGIN
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT OLD.appid, OLD.campaignid, OLD.bucket, OLD.friends, w.width, substr(OLD.reached_at, 1, w.width), -1
    FROM leaderboard_tie_widths w
    WHERE OLD.friends > 0
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, w.width, substr(NEW.reached_at, 1, w.width), 1
    FROM leaderboard_tie_widths w
    WHERE NEW.friends > 0
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  DELETE FROM leaderboard_ties WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends
    AND width IN (SELECT width FROM leaderboard_tie_widths) AND slice IN (SELECT substr(OLD.reached_at, 1, width) FROM leaderboard_tie_widths)
    AND referrers = 0;
END;
