-- Issue 34: reward programs. What a conversion event says was bought (its
-- product and category, matched by a rule's `categories` and
-- `inclusionsandexclusions`; docs/rewards.md, "Products and categories").
ALTER TABLE conversion_events ADD COLUMN productid TEXT;
ALTER TABLE conversion_events ADD COLUMN category TEXT;

-- A recurring window starts at the friend's first event of the rule's
-- eventname in the campaign (docs/rewards.md, "Recurring windows"): found by
-- one index seek per conversion instead of a walk over the friend's events.
CREATE INDEX conversion_events_first ON conversion_events(userid, campaignid, lower(trim(eventname)), created_at);
