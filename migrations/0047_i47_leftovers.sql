-- Issue 47's leftovers (its review).
--
-- Password resets expired are purged by the every-minute job
-- (src/cleanup.ts, purgePasswordResets): they can no longer be used and the
-- cap of migration 0041 counts only unexpired ones, so without the purge the
-- table grew by one row per reset request for ever. The job deletes in
-- chunks of the oldest expiries, a range of this index.
CREATE INDEX password_resets_expiry ON password_resets(expires_at);

-- Stripe cases (migration 0042) name a user and a Stripe customer: the
-- user's erasure deletes those naming its userkey or its customer
-- (src/db/stripe-identity.ts, deleteStripeCasesOf), a seek of each index.
CREATE INDEX stripe_cases_user ON stripe_cases(appid, userkey) WHERE userkey IS NOT NULL;
CREATE INDEX stripe_cases_customer ON stripe_cases(appid, customer) WHERE customer IS NOT NULL;
