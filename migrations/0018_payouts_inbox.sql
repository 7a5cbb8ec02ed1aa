-- Issue 31. The scheduled job finds the users whose Stripe payouts are open
-- (`due` or `sending`; `pending` for rewards queued before the payout
-- records) and untouched for a while, on the rewards projection, to re-drive
-- them from their ledger (src/ledger/payout-outcome.ts).
CREATE INDEX rewards_payout_open ON rewards(updated_at) WHERE payout_state IN ('pending', 'due', 'sending');

-- Stripe's events, stored before the endpoint answers 2xx (src/db/stripe-inbox.ts):
-- no crash loses an event Stripe was told we have. A row is done once its
-- work was applied or refused for good; the sweep sends again the rows
-- not done for a while. `object` is the JSON of the fields the mapping reads.
CREATE TABLE stripe_inbox (
	appid TEXT NOT NULL,
	eventid TEXT NOT NULL,
	type TEXT NOT NULL,
	object TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	-- When it was last handed to the Stripe queue (epoch ms).
	sent_at INTEGER NOT NULL,
	done_at INTEGER,
	outcome TEXT,
	-- A refund whose payment the service has not seen yet: the payment's ids it waits for.
	waits_for TEXT,
	PRIMARY KEY (appid, eventid)
) WITHOUT ROWID;
CREATE INDEX stripe_inbox_open ON stripe_inbox(sent_at) WHERE done_at IS NULL AND waits_for IS NULL;
CREATE INDEX stripe_inbox_waiting ON stripe_inbox(appid, waits_for) WHERE done_at IS NULL AND waits_for IS NOT NULL;
