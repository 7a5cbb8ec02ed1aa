-- Unique share-link clicks (issue 21): a repeat from the same client within
-- 30 minutes counts once. One row per (code, client) holds when its counted
-- click happened; a click counts only when it inserts the row or finds it
-- older than 30 minutes (then it takes the row over). `clientkey` is the HMAC
-- of the client's IP network and user agent under IP_HASH_KEY, never either in
-- clear; `token` is random per counted click, so the later statements of the
-- click's D1 batch count only when this click won the row. Rows older than
-- 30 minutes say nothing any more and are deleted by the every-minute cron
-- job through the index on counted_at, so the table holds at most the last
-- half hour's distinct clients.
CREATE TABLE link_click_seen (
  referralcode TEXT NOT NULL,
  clientkey TEXT NOT NULL,
  counted_at TEXT NOT NULL,
  token TEXT NOT NULL,
  PRIMARY KEY (referralcode, clientkey)
) WITHOUT ROWID;
CREATE INDEX link_click_seen_time ON link_click_seen(counted_at);
