-- Dashboard sessions held on the server (issue 21): a signed session cookie
-- is honoured only while its row is here, so signing out ends the session at
-- once instead of when the cookie expires. Only the SHA-256 of the session id
-- is stored (a copy of this table signs nobody in). Rows past expires_at are
-- deleted by the every-minute cron job.
CREATE TABLE admin_sessions (
  idhash TEXT PRIMARY KEY,
  -- Epoch milliseconds, the cookie's own expiry.
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX admin_sessions_expiry ON admin_sessions(expires_at);
