-- Issue 47: a person is sent at most 3 reset emails an hour
-- (src/dashboard/reset.tsx). The cap counts the person's resets made in the
-- last hour, those whose expires_at is still ahead: on (personid, expires_at)
-- that count is a range of at most a few entries however many resets the
-- person had, where on personid alone it read every reset ever made for them.
-- The old index is a prefix of the new one (the use of a reset, which ends a
-- person's open resets by personid, seeks the new one the same way).
CREATE INDEX password_resets_person_expiry ON password_resets(personid, expires_at);
DROP INDEX password_resets_person;
