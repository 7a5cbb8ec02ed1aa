-- Issue 22: scoped admin tokens. A token opens one app's admin routes with
-- its role's rights (src/admin/rights.ts); only its SHA-256 is kept. The
-- deployment's ADMIN_TOKEN stays the superuser.
CREATE TABLE admin_tokens (
	tokenid TEXT PRIMARY KEY,
	appid TEXT NOT NULL REFERENCES apps(appid),
	name TEXT NOT NULL,
	role TEXT NOT NULL CHECK (role IN ('viewer', 'reviewer', 'manager', 'owner')),
	token_hash TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL,
	revoked_at TEXT
);
-- The app's token list, newest first.
CREATE INDEX admin_tokens_app ON admin_tokens(appid, created_at);
