-- Issue 34: reward programs. What a conversion event says was bought (its
-- product and category, matched by a rule's `categories` and
-- `inclusionsandexclusions`; docs/rewards.md, "Products and categories").
ALTER TABLE conversion_events ADD COLUMN productid TEXT;
ALTER TABLE conversion_events ADD COLUMN category TEXT;

-- A recurring window starts at the friend's first event of the rule's
-- eventname in the campaign (docs/rewards.md, "Recurring windows"): found by
-- one index seek per conversion instead of a walk over the friend's events.
CREATE INDEX conversion_events_first ON conversion_events(userid, campaignid, lower(trim(eventname)), created_at);

-- Rule kinds beyond a fixed amount or a percent (docs/rewards.md): tiers
-- (JSON list of {fromcount, reward}, NULL for none), a recurring window in
-- calendar months (0: none) and a milestone (the N-th distinct friend; 0: none).
ALTER TABLE reward_rules ADD COLUMN tiers TEXT;
ALTER TABLE reward_rules ADD COLUMN recurringmonths INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reward_rules ADD COLUMN milestone INTEGER NOT NULL DEFAULT 0;

-- Vanity codes (docs/integration.md, "Vanity codes"): a user's code may be
-- changed with updateuser; each code it had before stays an alias of the
-- user, so links and applyreferrercode with a printed code keep working.
-- Codes are one namespace across apps (share links carry no app), like
-- users.referralcode.
CREATE TABLE referral_code_aliases (
	code TEXT PRIMARY KEY,
	appid TEXT NOT NULL,
	userid INTEGER NOT NULL REFERENCES users(userid),
	created_at TEXT NOT NULL
) WITHOUT ROWID;
-- A user's aliases (erasure, and the foreign key's check when a users row changes).
CREATE INDEX referral_code_aliases_user ON referral_code_aliases(userid);
