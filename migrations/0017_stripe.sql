-- Issue 23: Stripe. An app connected to Stripe (its secret key and webhook
-- secret sealed with AES-GCM under the Worker secret SECRETS_KEY; only the
-- secret key's last 4 characters in clear), the lookup of a user by the
-- Stripe customer a payment names, and the ids that link a conversion to
-- its Stripe payment (a refund is matched by its charge, else its payment
-- intent, else its invoice).
CREATE TABLE app_stripe (
	appid TEXT PRIMARY KEY REFERENCES apps(appid),
	secretkey_box TEXT NOT NULL,
	webhooksecret_box TEXT NOT NULL,
	secretkey_last4 TEXT NOT NULL,
	eventname TEXT NOT NULL DEFAULT 'Transaction',
	-- NULL: Stripe's own API.
	apiurl TEXT,
	updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX users_app_paymentcustomer ON users(appid, paymentcustomerid) WHERE paymentcustomerid IS NOT NULL;

CREATE TABLE stripe_links (
	appid TEXT NOT NULL,
	-- The conversion's customid: the invoice's id, else the checkout session's.
	customid TEXT NOT NULL,
	invoice TEXT,
	payment_intent TEXT,
	charge TEXT,
	checkout_session TEXT,
	currency TEXT NOT NULL,
	amount_minor INTEGER NOT NULL,
	-- What refunds took back so far (minor units), as the last charge.refunded said.
	refunded_minor INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL,
	PRIMARY KEY (appid, customid)
) WITHOUT ROWID;
CREATE INDEX stripe_links_charge ON stripe_links(appid, charge) WHERE charge IS NOT NULL;
CREATE INDEX stripe_links_intent ON stripe_links(appid, payment_intent) WHERE payment_intent IS NOT NULL;
CREATE INDEX stripe_links_invoice ON stripe_links(appid, invoice) WHERE invoice IS NOT NULL;

-- Stripe events answered 200 and not stored (an unknown customer, a type not
-- handled, a repeat): counted per app and outcome.
CREATE TABLE stripe_event_counts (
	appid TEXT NOT NULL,
	outcome TEXT NOT NULL,
	n INTEGER NOT NULL,
	PRIMARY KEY (appid, outcome)
) WITHOUT ROWID;

-- The rewards projection shows where a Stripe reward's payout stands (the dashboard's user page).
ALTER TABLE rewards ADD COLUMN payoutid TEXT;
ALTER TABLE rewards ADD COLUMN payout_state TEXT;
