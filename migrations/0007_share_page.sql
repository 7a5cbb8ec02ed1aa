-- Origin allowed to frame an app's hosted referral page (CSP frame-ancestors).
-- NULL: the origin of the app's landing URL.
ALTER TABLE apps ADD COLUMN frameorigin TEXT;
