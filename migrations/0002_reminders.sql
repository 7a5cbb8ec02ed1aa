-- Last friend reminder per friend: remindfriend sends at most one per friend
-- per 24 h. `token` is the random id of the call that last sent one, so the
-- outbox insert batched after the guarded upsert fires only for that call.
CREATE TABLE friend_reminders (
  friend_userid INTEGER PRIMARY KEY REFERENCES users(userid),
  last_sent_at TEXT NOT NULL,
  token TEXT NOT NULL
);
