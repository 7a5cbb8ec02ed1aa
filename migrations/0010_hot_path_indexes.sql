-- Issue 19: no lookup on a hot path scans a table that grows with use. Each
-- index below turns a full scan into an index search; the query-plan guard
-- (test/query-plan/) fails on any statement that scans such a table.

-- The guards batched after an attribution (friend counter, referral.attributed
-- webhook, late-attribution counter) find the user by the call's random id.
CREATE INDEX users_attribution ON users(attribution_id) WHERE attribution_id IS NOT NULL;
-- The same for a conversion (referrer's converted count, conversion counters).
CREATE INDEX users_conversion ON users(conversion_id) WHERE conversion_id IS NOT NULL;
-- The velocity fraud signal counts a referrer's friends attributed in one
-- hour: a range of this index, not every friend the referrer ever had.
CREATE INDEX users_referrer_attributed ON users(referrer_userid, attributed_at) WHERE referrer_userid IS NOT NULL;
-- remindfriend's webhook is recorded only when its claim (by token) holds.
CREATE INDEX friend_reminders_token ON friend_reminders(token);
-- A share link on an unknown code falls back to the app whose campaign uses
-- the request's host as its custom domain.
CREATE INDEX campaigns_customdomain ON campaigns(customdomain);
-- A person's events (export, erasure), and the foreign-key check of users rows.
CREATE INDEX conversion_events_user ON conversion_events(userid);
-- The admin list of apps pages by (created_at, appid).
CREATE INDEX apps_created ON apps(created_at, appid);
-- The clean-up of delivered outbox events (and their attempts) after 30 days.
CREATE INDEX outbox_delivered ON outbox_events(delivered_at) WHERE delivered_at IS NOT NULL;
