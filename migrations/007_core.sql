-- Occupancy per distinct slot, so that admitting a booking costs the number of distinct slots
-- overlapping it, not the number of bookings (a large resource held by tens of thousands of
-- bookings of the same slot was a full scan per booking). A booking counts in slot_occupancy
-- while `occupying` is 1: confirmed, or pending within its hold (expired holds are released by
-- the next admission on the resource).
CREATE TABLE slot_occupancy (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    resource_id TEXT NOT NULL,
    starts_at BIGINT NOT NULL,
    ends_at BIGINT NOT NULL,
    bookings INTEGER NOT NULL,
    seats INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, resource_id, starts_at, ends_at)
);

ALTER TABLE bookings ADD COLUMN occupying INTEGER NOT NULL DEFAULT 0;
CREATE INDEX bookings_occupying_holds ON bookings (tenant_id, resource_id, hold_expires_at) WHERE status = 'pending_payment' AND occupying = 1;

UPDATE bookings SET occupying = 1
WHERE status = 'confirmed' OR (status = 'pending_payment' AND hold_expires_at > CAST(strftime('%s', 'now') AS INTEGER) * 1000);

INSERT INTO slot_occupancy (tenant_id, resource_id, starts_at, ends_at, bookings, seats)
SELECT tenant_id, resource_id, starts_at, ends_at, COUNT(*), SUM(seats) FROM bookings WHERE occupying = 1
GROUP BY tenant_id, resource_id, starts_at, ends_at;

-- The outbox hands each message to one deliverer at a time: a lease with an owner and an expiry.
ALTER TABLE webhook_outbox ADD COLUMN lease_owner TEXT;
ALTER TABLE webhook_outbox ADD COLUMN leased_until BIGINT;
