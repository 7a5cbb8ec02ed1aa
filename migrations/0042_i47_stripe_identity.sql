-- Issue 47: identity from the product, never from a typed email (docs/stripe.md, "How an event finds its user").
--
-- A Stripe customer unknown to the app that pays with a referrer's promotion
-- code becomes a user known by its customer id alone. Two events of one new
-- customer (a checkout and its invoice) arrive together: the first to claim
-- the customer here creates its user, the other is retried and then finds it.
CREATE TABLE stripe_customer_claims (
	appid TEXT NOT NULL,
	customer TEXT NOT NULL,
	-- The event whose work creates the user (a retry of that event may go on).
	eventid TEXT NOT NULL,
	claimed_at INTEGER NOT NULL,
	PRIMARY KEY (appid, customer)
) WITHOUT ROWID;

-- What the operator is shown beside the counts (the app's `stripe.cases`,
-- the dashboard's Stripe section): the recent Stripe events that paid nothing
-- for a reason an operator acts on, e.g. a payment whose email is a user's
-- whose customer the product never linked. The newest first, on the index.
CREATE TABLE stripe_cases (
	appid TEXT NOT NULL,
	eventid TEXT NOT NULL,
	kind TEXT NOT NULL,
	customer TEXT,
	userkey TEXT,
	detail TEXT,
	at INTEGER NOT NULL,
	PRIMARY KEY (appid, eventid, kind)
) WITHOUT ROWID;
CREATE INDEX stripe_cases_recent ON stripe_cases(appid, at);

-- Chargebacks (docs/stripe.md "Disputes"): each Stripe dispute of an app and
-- where it stands. `open` holds the conversion's rewards; `won` and `lost`
-- are final (a closed dispute never opens again), so a close that arrives
-- before its open, duplicates and concurrent deliveries converge.
CREATE TABLE stripe_disputes (
	appid TEXT NOT NULL,
	dispute TEXT NOT NULL,
	customid TEXT NOT NULL,
	state TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (appid, dispute)
) WITHOUT ROWID;
