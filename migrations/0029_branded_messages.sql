-- Issue 34: branded, editable messages (docs/messages.md).
-- An app's logo (an https URL) and accent colour (#rrggbb) on its share page,
-- widget and emails; copied to the test twin like every shared setting (db/apps.ts).
ALTER TABLE apps ADD COLUMN logourl TEXT;
ALTER TABLE apps ADD COLUMN accentcolor TEXT;

-- A campaign's own text of an email it sends, one row per kind and language;
-- no row: the service's default in that language. Read by its primary key's
-- prefix (campaignid, kind) when an email is rendered: at most 4 rows.
CREATE TABLE campaign_messages (
  campaignid INTEGER NOT NULL REFERENCES campaigns(campaignid),
  kind TEXT NOT NULL CHECK (kind IN ('outreach', 'reminder')),
  language TEXT NOT NULL CHECK (language IN ('en', 'fr', 'de', 'es')),
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (campaignid, kind, language)
) WITHOUT ROWID;
