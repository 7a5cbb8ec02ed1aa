-- Issue 32: passkeys (WebAuthn) for the dashboard, and an app's setting that
-- requires them of its members (docs/operators.md, "Passkeys").

-- A person's passkeys: the credential id and COSE public key the
-- authenticator gave at registration (base64url), its signature counter
-- (checked and advanced on every sign-in), and the name the person gave it.
CREATE TABLE passkeys (
	credential_id TEXT PRIMARY KEY,
	personid TEXT NOT NULL REFERENCES people(personid),
	public_key TEXT NOT NULL,
	counter INTEGER NOT NULL,
	-- JSON array of the authenticator's transports ("internal", "usb", ...).
	transports TEXT NOT NULL,
	name TEXT NOT NULL,
	created_at TEXT NOT NULL,
	last_used_at TEXT
) WITHOUT ROWID;
-- A person's passkeys, oldest first (the account page, the sign-in policy).
CREATE INDEX passkeys_person ON passkeys(personid, created_at);

-- Challenges are minted without a row (signed, expiring: src/dashboard/webauthn.ts);
-- a challenge is recorded here when a ceremony uses it, so it works once.
-- Rows past expires_at are deleted by the every-minute cron job.
CREATE TABLE passkey_challenges_used (
	challenge TEXT PRIMARY KEY,
	-- Epoch milliseconds: the challenge's own expiry.
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX passkey_challenges_used_expiry ON passkey_challenges_used(expires_at);

-- An owner's setting: members of the app sign in with a passkey (0/1).
ALTER TABLE apps ADD COLUMN require_passkeys INTEGER NOT NULL DEFAULT 0;

-- How a dashboard session was signed in: 'token' (ADMIN_TOKEN), 'password'
-- or 'passkey'; NULL for sessions from before this migration (read as password).
ALTER TABLE admin_sessions ADD COLUMN method TEXT;
