-- Issue 47: a payout whose outcome is unknown (src/ledger/payout-resolution.ts) is looked up in
-- Stripe by the scheduled job's re-drive, which finds its user through this partial index
-- (src/db/payout-redrive.ts): it now covers `unknown` too.
DROP INDEX IF EXISTS rewards_payout_open;
CREATE INDEX rewards_payout_open ON rewards(updated_at) WHERE payout_state IN ('pending', 'due', 'sending', 'unknown');
