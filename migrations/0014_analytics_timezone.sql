-- Analytics in the app's time zone (issue 24 item 6).
--
-- An app's IANA time zone; its analytics days are local days of that zone.
ALTER TABLE apps ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';

-- The same counters as stats_daily, per UTC quarter hour (`slot`, 'YYYY-MM-DDTHH:MM',
-- minutes 00, 15, 30 or 45): every zone's offset is a whole number of quarter
-- hours, so a local day is an exact set of slots whatever the zone, and a
-- change of the app's zone re-buckets history instead of keeping UTC days.
-- `reward_amount` is what rewards earned: less what was reversed, nothing once
-- Rejected (the projection flush adjusts it, src/db/stats.ts).
CREATE TABLE stats_slots (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  slot TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL DEFAULT '',
  value REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (appid, slot, campaignid, metric, unit)
) WITHOUT ROWID;

-- History before this migration is known per UTC day only: it lands on the day's first slot.
INSERT INTO stats_slots (appid, campaignid, slot, metric, unit, value)
  SELECT appid, campaignid, day || 'T00:00', metric, unit, value FROM stats_daily;
