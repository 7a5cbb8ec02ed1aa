-- Issue 35: test mode. The test side of an app is another apps row, its
-- twin (appid `<live appid>_test`, keys ak_test_/pk_test_), naming its live
-- app in live_appid (NULL for a live app). Every record is scoped by appid, so
-- the twin's users, codes, events, ledgers, outbox events, clicks and stats
-- never meet the live app's. The twin holds a copy of its live app's
-- settings, written by every settings change with the live row
-- (db/apps.ts), and reads its live app's campaigns (App.campaignAppid).
-- Its Stripe connection ("teststripe") is the app_stripe row of its own appid.
ALTER TABLE apps ADD COLUMN live_appid TEXT REFERENCES apps(appid);
CREATE UNIQUE INDEX apps_live ON apps(live_appid) WHERE live_appid IS NOT NULL;
