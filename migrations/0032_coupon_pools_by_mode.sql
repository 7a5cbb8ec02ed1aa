-- Issue 35: a campaign's coupon pool is split by mode. Test and live share an
-- app's campaigns, but a reward made with test keys must never take a real
-- code (docs/test-mode.md): codes added with ?mode=test form the campaign's
-- test pool, which only the test twin's rewards draw from. Existing codes are
-- live. A code is in one pool only (UNIQUE (campaignid, coupon) stays).
ALTER TABLE coupons ADD COLUMN livemode INTEGER NOT NULL DEFAULT 1;
DROP INDEX coupons_free;
CREATE INDEX coupons_free ON coupons(campaignid, livemode, couponid) WHERE reward_key IS NULL;
