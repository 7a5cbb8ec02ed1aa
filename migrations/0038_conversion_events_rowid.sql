-- Issue 33, rows written per conversion: conversion_events loses
-- AUTOINCREMENT. With it, every recorded event also wrote its table's row
-- in sqlite_sequence (one row of the 5 an event writes). An event's
-- eventid is only its order of recording (a person's export sorts by it;
-- nothing else stores it: webhook ids are made of the app and customid,
-- src/operations/conversion-grants.ts), and events are deleted only with
-- an app's test data, so a plain INTEGER PRIMARY KEY (the largest id plus
-- one) is enough: an id freed by deleting the newest test events may be
-- given again, which nothing can tell apart. SQLite cannot drop
-- AUTOINCREMENT in place, hence the rebuild: every row copied once, with
-- its id, in the migration's transaction (native SQLite on a copy with
-- 1,000,000 events: see docs/scaling.md, "Rows written per conversion"),
-- and the same indexes made again.
PRAGMA defer_foreign_keys = true;
CREATE TABLE conversion_events_rebuilt (
  eventid INTEGER PRIMARY KEY,
  appid TEXT NOT NULL,
  customid TEXT NOT NULL,
  userid INTEGER NOT NULL REFERENCES users(userid),
  eventname TEXT NOT NULL,
  transactionvalue REAL,
  extrainfo TEXT,
  campaignid INTEGER,
  growthhack TEXT NOT NULL,
  created_at TEXT NOT NULL,
  decision TEXT,
  grants_pending INTEGER,
  productid TEXT,
  category TEXT,
  UNIQUE (appid, customid)
);
INSERT INTO conversion_events_rebuilt (eventid, appid, customid, userid, eventname, transactionvalue, extrainfo, campaignid, growthhack,
  created_at, decision, grants_pending, productid, category)
  SELECT eventid, appid, customid, userid, eventname, transactionvalue, extrainfo, campaignid, growthhack,
    created_at, decision, grants_pending, productid, category FROM conversion_events;
DROP TABLE conversion_events;
ALTER TABLE conversion_events_rebuilt RENAME TO conversion_events;
CREATE INDEX conversion_events_grants_pending ON conversion_events(created_at) WHERE grants_pending IS NOT NULL;
CREATE INDEX conversion_events_first ON conversion_events(userid, campaignid, lower(trim(eventname)), created_at);
