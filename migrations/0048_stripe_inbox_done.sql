-- Stripe's events once done (src/db/stripe-inbox.ts): their `object` (the
-- fields the mapping read, which may hold an email a payer typed at checkout)
-- is emptied when they are marked done, and the rows go 35 days later (the
-- daily job purge-done-stripe-events), oldest first through this index.
CREATE INDEX stripe_inbox_done ON stripe_inbox(done_at) WHERE done_at IS NOT NULL;
-- Events done before this migration: emptied now (one pass over the table, at migration time only).
UPDATE stripe_inbox SET object = '{}' WHERE done_at IS NOT NULL;
