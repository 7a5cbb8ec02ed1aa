-- Issue 33, rows written per conversion: tie slices (migration 0033) only
-- where ties are many. A referrer reward that moved a count wrote six tie
-- slices out of the old count and six into the new one, in each of its three
-- period buckets: 42 of a first reward's 68 D1 rows (bench rowsBySql, the
-- night of 2026-11-26), on levels of a few referrers whose ties cost almost
-- nothing to count on leaderboard_counts_rank.
--
-- A level (board, count of friends) gets tie slices once it holds at least
-- 1,024 referrers (TIE_SLICES_FROM in src/db/leaderboard-ties.ts): counting
-- up to that many ties on the rank index reads under 1,024 index entries
-- (under ~1 ms of D1 time at ~0.75 us an entry, issue 34's measure). The
-- write that brings a level to 1,024 sets `ties` on its leaderboard_levels
-- row and, in the same statement, counts that level's slices from
-- leaderboard_counts (~1,024 counter rows read, up to 6 slice rows each
-- written, once per level). A flagged level keeps its slices while it
-- exists, whatever it shrinks to (a flag never clears: no flapping at the
-- threshold, and a flagged level is always exact). An unflagged level has
-- no slices and fewer than 1,024 referrers, so a rank counts its ties on the
-- index (src/db/leaderboard-ties.ts).
ALTER TABLE leaderboard_levels ADD COLUMN ties INTEGER NOT NULL DEFAULT 0;

-- One trigger per event instead of one per table and event (0030's levels,
-- 0033's slices): SQLite documents no order among triggers of one table and
-- event, and the slices now depend on the level's count and flag, so the
-- level moves first, then its slices, in one body whose statements run in
-- order.
DROP TRIGGER leaderboard_levels_insert;
DROP TRIGGER leaderboard_levels_delete;
DROP TRIGGER leaderboard_levels_update;
DROP TRIGGER leaderboard_ties_insert;
DROP TRIGGER leaderboard_ties_delete;
DROP TRIGGER leaderboard_ties_update;

-- Existing boards: flag every level at or above the threshold (it keeps its
-- slices, already counted by 0033's triggers), delete the slices of every
-- other level. Reads leaderboard_levels and leaderboard_ties once each
-- (every board); writes one row per flagged level and deletes the slices of
-- small levels (at most 6 per counter row). How long it runs on a big
-- board: docs/scaling.md ("Tie slices only where ties are many").
UPDATE leaderboard_levels SET ties = 1 WHERE referrers >= 1024;
DELETE FROM leaderboard_ties WHERE NOT EXISTS (
  SELECT 1 FROM leaderboard_levels l WHERE l.appid = leaderboard_ties.appid AND l.campaignid = leaderboard_ties.campaignid
    AND l.bucket = leaderboard_ties.bucket AND l.friends = leaderboard_ties.friends AND l.ties = 1
);

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
