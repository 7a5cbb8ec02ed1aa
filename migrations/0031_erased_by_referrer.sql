-- Issue 33: the projection queue's consumer writes a ledger's webhook events
-- only when neither the ledger's user nor one of its friends (whose values a
-- referrer's ledger copies) was erased at or after the message was sent
-- (src/db/privacy.ts, erasedSince). The friends' side is a seek in this index,
-- which holds only erased users: nothing is written for anyone else.
CREATE INDEX users_erased_by_referrer ON users(referrer_userid, erased_at) WHERE erased_at IS NOT NULL;
