-- Alias signatures bound to the device's token and an expiry (v2) are the only form new apps
-- take; apps that existed before keep taking the old form (the alias alone) until their admin
-- turns it off, so their back-ends keep working through the upgrade (docs/security.md).
ALTER TABLE apps ADD COLUMN alias_signatures_v1 boolean NOT NULL DEFAULT false;
UPDATE apps SET alias_signatures_v1 = true;
