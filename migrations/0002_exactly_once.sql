-- Issue 9: exactly-once money operations.
--
-- The decision of each multi-ledger transaction (coordination/ledger-transaction.ts).
-- The coordinator writes 'commit' once every ledger has prepared; a ledger whose
-- lease ended without a commit writes 'abort'. The primary key makes the first
-- writer win, so the two can never disagree; both then act on the stored row.
CREATE TABLE ledger_decisions (
  txid TEXT PRIMARY KEY,
  appid TEXT NOT NULL,
  decision TEXT NOT NULL CHECK (decision IN ('commit', 'abort')),
  created_at TEXT NOT NULL
);
CREATE INDEX ledger_decisions_created ON ledger_decisions(created_at);

-- Idempotency-Key of mutating operations, per app (http/idempotency.ts). `state`
-- is 'running' while the first request runs (`locked_until` lets a retry take
-- over from a request that died; `token` names the request that holds it),
-- then 'done' with the answer to replay.
CREATE TABLE idempotency_keys (
  appid TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  operation TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'done')),
  token TEXT NOT NULL,
  locked_until INTEGER NOT NULL,
  status INTEGER,
  body TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (appid, idempotency_key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys(expires_at);

-- Rule identity (docs/rewards.md): a PATCH updates rules in place by ruleid and
-- retires the ones it leaves out; a retired rule is kept for history and never fires.
ALTER TABLE reward_rules ADD COLUMN retired_at TEXT;

-- The frozen decision of an event: the rewards it earns, computed once from the
-- rules of its first recording (JSON list of grants). A replay completes exactly this.
ALTER TABLE conversion_events ADD COLUMN decision TEXT;
