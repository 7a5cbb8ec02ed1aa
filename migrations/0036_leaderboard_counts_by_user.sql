-- Issue 33, rows written per conversion: leaderboard_counts keyed by
-- (appid, userkey, campaignid, bucket) instead of (appid, campaignid,
-- bucket, userkey), so the table itself finds a user's counters (an
-- erasure's delete, src/db/leaderboard.ts deleteLeaderboardCounters) and
-- leaderboard_counts_user (appid, userkey), migration 0030, goes: a new
-- counter writes 3 rows instead of 4 (its row, its rank index entry, its
-- level), 3 fewer per first-reward conversion (three period buckets).
-- Every other read of a counter names all four key columns (the flush's
-- upsert and UPDATE, a standing's own row) or goes through
-- leaderboard_counts_rank (the board, its ties, the triggers' level
-- counts), whose entries carry the whole key whatever its order.
--
-- SQLite cannot change a primary key in place: the table is made again, its
-- rows copied in the new key's order, the old one dropped (with its two
-- indexes and the three triggers of migration 0035), the new one renamed,
-- then the rank index and the triggers made again exactly as 0035 made
-- them. The copy writes no level nor tie slice (the new table has no
-- triggers yet): leaderboard_levels and leaderboard_ties already count
-- these very rows.
--
-- What it costs: one statement reads every counter of every board and
-- writes it again with its rank index entry. On a copy of a board of
-- 100,000 referrers in three buckets (300,000 counters, native SQLite
-- 3.40 on the shared 2-core machine at a load average of 6-7), the whole
-- migration took 3.7-4.7 s wall, 1.1 s of CPU; the file grows by the new
-- table before the old one's pages are freed (94 -> 125 MB there, the free
-- pages reused by later writes). It grows with all boards together: tens of
-- such boards take tens of seconds in one migration, during which D1
-- answers nothing else; a database of hundreds would want the rebuild
-- planned as a step of its own (not built). docs/scaling.md, "leaderboard_counts keyed by the user".
CREATE TABLE leaderboard_counts_0036 (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  userkey TEXT NOT NULL,
  friends INTEGER NOT NULL DEFAULT 0,
  earned REAL NOT NULL DEFAULT 0,
  reached_at TEXT NOT NULL,
  PRIMARY KEY (appid, userkey, campaignid, bucket)
) WITHOUT ROWID;
INSERT INTO leaderboard_counts_0036 (appid, campaignid, bucket, userkey, friends, earned, reached_at)
  SELECT appid, campaignid, bucket, userkey, friends, earned, reached_at FROM leaderboard_counts
  ORDER BY appid, userkey, campaignid, bucket;
DROP TABLE leaderboard_counts;
ALTER TABLE leaderboard_counts_0036 RENAME TO leaderboard_counts;
-- The board in rank order (migration 0025).
CREATE INDEX leaderboard_counts_rank ON leaderboard_counts(appid, campaignid, bucket, friends DESC, reached_at, userkey);

-- The triggers of migration 0035, unchanged (dropped with the old table).
-- A new counter: one more referrer at its count; its slices if the level has
-- them; the level's slices counted (the new row included) when this write
-- brings it to the threshold, then the flag. That count is driven by the
-- level's row (CROSS JOIN), so any other write reads no counter: under an
-- EXISTS filter instead, SQLite read the level's counters on every write
-- (1,209 rows read for one insert on a level of 600, measured).
CREATE TRIGGER leaderboard_counts_insert AFTER INSERT ON leaderboard_counts WHEN NEW.friends > 0 BEGIN
  INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers) VALUES (NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, 1)
    ON CONFLICT (appid, campaignid, bucket, friends) DO UPDATE SET referrers = referrers + 1;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, w.width, substr(NEW.reached_at, 1, w.width), 1
    FROM leaderboard_tie_widths w
    WHERE EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid AND l.bucket = NEW.bucket
      AND l.friends = NEW.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT c.appid, c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width), COUNT(*)
    FROM leaderboard_levels l CROSS JOIN leaderboard_counts c CROSS JOIN leaderboard_tie_widths w
    WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid AND l.bucket = NEW.bucket AND l.friends = NEW.friends
      AND l.ties = 0 AND l.referrers >= 1024
      AND c.appid = l.appid AND c.campaignid = l.campaignid AND c.bucket = l.bucket AND c.friends = l.friends
    GROUP BY w.width, substr(c.reached_at, 1, w.width)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  UPDATE leaderboard_levels SET ties = 1
    WHERE appid = NEW.appid AND campaignid = NEW.campaignid AND bucket = NEW.bucket AND friends = NEW.friends AND ties = 0 AND referrers >= 1024;
END;

-- A deleted counter (an erasure): one referrer less at its count, out of its
-- slices if the level has them, emptied slices deleted.
CREATE TRIGGER leaderboard_counts_delete AFTER DELETE ON leaderboard_counts WHEN OLD.friends > 0 BEGIN
  UPDATE leaderboard_levels SET referrers = referrers - 1
    WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT OLD.appid, OLD.campaignid, OLD.bucket, OLD.friends, w.width, substr(OLD.reached_at, 1, w.width), -1
    FROM leaderboard_tie_widths w
    WHERE EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = OLD.appid AND l.campaignid = OLD.campaignid AND l.bucket = OLD.bucket
      AND l.friends = OLD.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  DELETE FROM leaderboard_ties WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends
    AND width IN (SELECT width FROM leaderboard_tie_widths) AND slice IN (SELECT substr(OLD.reached_at, 1, width) FROM leaderboard_tie_widths)
    AND referrers = 0;
END;

-- A change of count or of reached_at (the flush raises both together; a
-- decrease keeps reached_at): the levels first (out of the old count, into
-- the new), then out of the old slices and into the new ones where those
-- levels have slices (a slice both left and entered nets to 0), emptied old
-- slices deleted, and last the new level's slices counted when this write
-- brings it to the threshold (after the step into the new slices, which
-- then skips it: the row is counted once).
CREATE TRIGGER leaderboard_counts_update AFTER UPDATE OF friends, reached_at ON leaderboard_counts
  WHEN OLD.friends <> NEW.friends OR OLD.reached_at IS NOT NEW.reached_at BEGIN
  UPDATE leaderboard_levels SET referrers = referrers - 1
    WHERE OLD.friends <> NEW.friends AND OLD.friends > 0
      AND appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends;
  INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, 1 WHERE OLD.friends <> NEW.friends AND NEW.friends > 0
    ON CONFLICT (appid, campaignid, bucket, friends) DO UPDATE SET referrers = referrers + 1;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT OLD.appid, OLD.campaignid, OLD.bucket, OLD.friends, w.width, substr(OLD.reached_at, 1, w.width), -1
    FROM leaderboard_tie_widths w
    WHERE OLD.friends > 0 AND EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = OLD.appid AND l.campaignid = OLD.campaignid
      AND l.bucket = OLD.bucket AND l.friends = OLD.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, w.width, substr(NEW.reached_at, 1, w.width), 1
    FROM leaderboard_tie_widths w
    WHERE NEW.friends > 0 AND EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid
      AND l.bucket = NEW.bucket AND l.friends = NEW.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  DELETE FROM leaderboard_ties WHERE OLD.friends > 0 AND appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket
    AND friends = OLD.friends AND width IN (SELECT width FROM leaderboard_tie_widths)
    AND slice IN (SELECT substr(OLD.reached_at, 1, width) FROM leaderboard_tie_widths) AND referrers = 0;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT c.appid, c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width), COUNT(*)
    FROM leaderboard_levels l CROSS JOIN leaderboard_counts c CROSS JOIN leaderboard_tie_widths w
    WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid AND l.bucket = NEW.bucket AND l.friends = NEW.friends
      AND NEW.friends > 0 AND l.ties = 0 AND l.referrers >= 1024
      AND c.appid = l.appid AND c.campaignid = l.campaignid AND c.bucket = l.bucket AND c.friends = l.friends
    GROUP BY w.width, substr(c.reached_at, 1, w.width)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  UPDATE leaderboard_levels SET ties = 1
    WHERE NEW.friends > 0 AND appid = NEW.appid AND campaignid = NEW.campaignid AND bucket = NEW.bucket AND friends = NEW.friends
      AND ties = 0 AND referrers >= 1024;
END;
