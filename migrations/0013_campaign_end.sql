-- Issue 24: a campaign can be ended. From campaignenddate on (ISO-8601, UTC)
-- its events earn nothing, as before its campaignstartdate; NULL: no end.
ALTER TABLE campaigns ADD COLUMN campaignenddate TEXT;
