-- Issue 20 item 5: a queue message lost before the consumer saw it (a
-- restart of the queue, a crash) left its event marked enqueued with no
-- attempt, and the sweep only looked at events never enqueued. The consumer
-- now stamps `attempted_at` with the first attempt it logs; the sweep re-sends
-- events enqueued a while ago and still unattempted, found through the
-- partial index below, which holds only events in flight to their first
-- attempt (delivered and attempted events leave it).
ALTER TABLE outbox_events ADD COLUMN attempted_at TEXT;
-- Events already attempted before this migration are not re-sent.
UPDATE outbox_events
   SET attempted_at = (SELECT MIN(a.created_at) FROM delivery_attempts a WHERE a.eventid = outbox_events.eventid)
 WHERE delivered_at IS NULL;
CREATE INDEX outbox_unattempted ON outbox_events(enqueued_at)
  WHERE enqueued_at IS NOT NULL AND attempted_at IS NULL AND delivered_at IS NULL;
