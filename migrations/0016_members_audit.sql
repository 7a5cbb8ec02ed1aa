-- Issue 22: team members with roles, and the audit log.
--
-- A person signs in to the dashboard with an email and a password (PBKDF2-
-- SHA256, per-person salt; src/admin/passwords.ts). A person is a member of
-- one or more apps, with a role in each (src/admin/rights.ts).
CREATE TABLE people (
	personid TEXT PRIMARY KEY,
	email TEXT NOT NULL UNIQUE,
	-- NULL until the first invitation is accepted.
	password_hash TEXT,
	password_salt TEXT,
	password_iterations INTEGER,
	created_at TEXT NOT NULL
);

CREATE TABLE members (
	memberid TEXT PRIMARY KEY,
	appid TEXT NOT NULL REFERENCES apps(appid),
	personid TEXT NOT NULL REFERENCES people(personid),
	role TEXT NOT NULL CHECK (role IN ('viewer', 'reviewer', 'manager', 'owner')),
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	UNIQUE (appid, personid)
);
-- A person's apps (the dashboard's list, a session's rights).
CREATE INDEX members_person ON members(personid);
-- The app's member list, oldest first.
CREATE INDEX members_app ON members(appid, created_at);

-- An invitation: one use, valid 7 days; only the SHA-256 of its token is kept.
CREATE TABLE member_invitations (
	token_hash TEXT PRIMARY KEY,
	memberid TEXT NOT NULL REFERENCES members(memberid),
	-- Epoch milliseconds.
	expires_at INTEGER NOT NULL,
	used_at TEXT
) WITHOUT ROWID;
CREATE INDEX member_invitations_member ON member_invitations(memberid);

-- A dashboard session is the superuser's (personid NULL) or a person's;
-- removing a member ends that person's sessions.
ALTER TABLE admin_sessions ADD COLUMN personid TEXT;
CREATE INDEX admin_sessions_person ON admin_sessions(personid) WHERE personid IS NOT NULL;

-- The audit log: one row per change made through the admin API or the
-- dashboard, and per money decision of the public API. Written in the same
-- D1 batch as the change (or, for a ledger's change, in the ledger's own
-- transaction and delivered by its outbox under `entryid`, so a replay adds
-- nothing). Entries are never updated; they are deleted after the retention
-- of docs/operators.md.
CREATE TABLE audit_log (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	entryid TEXT NOT NULL UNIQUE,
	appid TEXT NOT NULL,
	at TEXT NOT NULL,
	-- superuser | member | token | appkey
	actor_type TEXT NOT NULL,
	-- memberid, tokenid or apikey; NULL for the superuser.
	actor_id TEXT,
	-- What a reader recognizes: the member's email, the token's name, the apikey, "superuser".
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	target_type TEXT NOT NULL,
	target_id TEXT,
	-- JSON {field: {"before": ..., "after": ...}}; secrets never.
	changes TEXT NOT NULL,
	iphash TEXT
);
CREATE INDEX audit_app ON audit_log(appid, seq);
CREATE INDEX audit_app_action ON audit_log(appid, action, seq);
CREATE INDEX audit_app_actor ON audit_log(appid, actor, seq);
CREATE INDEX audit_app_target ON audit_log(appid, target_type, target_id, seq);
-- The retention purge, oldest first.
CREATE INDEX audit_at ON audit_log(at);
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit entries are never updated');
END;
