-- Circuit breaker per app webhook endpoint (src/outbox/breaker.ts): consecutive
-- failures, and while open, until when deliveries wait without being attempted.
-- `endpoint` is the URL the state is about: a changed URL starts closed.
-- `version` makes each change a compare-and-set (deliveries run in parallel).
CREATE TABLE webhook_breakers (
  appid TEXT PRIMARY KEY,
  endpoint TEXT NOT NULL,
  failures INTEGER NOT NULL DEFAULT 0,
  opens INTEGER NOT NULL DEFAULT 0,
  open_until INTEGER,
  probe_until INTEGER,
  last_error TEXT,
  last_failure_at TEXT,
  version INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
);
