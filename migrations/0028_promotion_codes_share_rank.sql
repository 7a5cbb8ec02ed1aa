-- Issue 34: promotion codes at checkout (docs/stripe.md, "Promotion codes").
-- The customer-facing `code` of each Stripe promotion code a payment carried,
-- as read once from Stripe's API (GET /v1/promotion_codes/{id}). Stripe never
-- changes a promotion code's `code` after creation, so an entry never goes
-- stale and is kept in D1 (durable, shared by every isolate and location,
-- unlike the Cache API, which is per data centre and may evict): every later
-- payment with the same promotion code reads it here instead of calling
-- Stripe. Which user the code names is decided again at each payment (codes
-- and aliases change), so only the id-to-code mapping is kept. One row per
-- promotion code an app's customers used.
CREATE TABLE stripe_promotion_codes (
	appid TEXT NOT NULL,
	promotion_code TEXT NOT NULL,
	code TEXT NOT NULL,
	fetched_at TEXT NOT NULL,
	PRIMARY KEY (appid, promotion_code)
) WITHOUT ROWID;

-- Issue 34: the user's rank on the share page ("You are #3 of this month's
-- referrers", read from leaderboard_counts), shown when the campaign turns it on.
ALTER TABLE campaigns ADD COLUMN showleaderboard INTEGER NOT NULL DEFAULT 0;
