-- A short reference per booking that people can read out (7 characters without 0, O, 1, I; unique
-- within a tenant), and the IANA time zone the booking was made in (NULL: UTC). Bookings made
-- before this migration get a reference when it is applied (Migrator), and no zone (UTC, as then).
ALTER TABLE bookings ADD COLUMN reference TEXT;
ALTER TABLE bookings ADD COLUMN time_zone TEXT;
CREATE UNIQUE INDEX bookings_reference ON bookings (tenant_id, reference);
