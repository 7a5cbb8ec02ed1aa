-- Issue 32: a membership starts when its own invitation is accepted, local
-- mail, password resets by email.
--
-- A member row is inserted when an owner adds an email, but gives no access
-- until `accepted_at` is set by accepting that member's own invitation (the
-- link goes to the email only). Memberships accepted before this migration
-- keep their acceptance time; one whose invitation was never used (a person
-- who already had a password was live at once before) must be invited again.
ALTER TABLE members ADD COLUMN accepted_at TEXT;
UPDATE members SET accepted_at = (
	SELECT MIN(i.used_at) FROM member_invitations i WHERE i.memberid = members.memberid AND i.used_at IS NOT NULL
);

-- Password resets: one use, valid 1 hour; only the SHA-256 of the token is kept.
CREATE TABLE password_resets (
	token_hash TEXT PRIMARY KEY,
	personid TEXT NOT NULL REFERENCES people(personid),
	-- Epoch milliseconds.
	expires_at INTEGER NOT NULL,
	used_at TEXT
) WITHOUT ROWID;
-- A person's open resets, ended together when one is used.
CREATE INDEX password_resets_person ON password_resets(personid);

-- Local mail (ENVIRONMENT=development only): every email the service sends,
-- readable at GET /dev/mail and on the dashboard's Mail page. A deployed
-- Worker never writes here.
CREATE TABLE dev_mail (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	to_address TEXT NOT NULL,
	subject TEXT NOT NULL,
	text TEXT NOT NULL,
	html TEXT NOT NULL,
	sent_at TEXT NOT NULL
);
