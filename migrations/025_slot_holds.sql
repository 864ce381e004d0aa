-- Unpaid holds per distinct slot, beside the bookings and seats that occupy it, so that counting
-- the holds on a resource's slot window (the per-resource cap) costs the number of distinct
-- overlapping slots, not the number of bookings: a slot held by 100,000 unpaid bookings was a
-- scan of all of them per new booking. `holds` counts the bookings of the slot that are
-- `pending_payment` and still `occupying` (within their hold until the next admission on the
-- resource releases them).
ALTER TABLE slot_occupancy ADD COLUMN holds INTEGER NOT NULL DEFAULT 0;

UPDATE slot_occupancy SET holds = (
    SELECT COUNT(*) FROM bookings
    WHERE bookings.tenant_id = slot_occupancy.tenant_id AND bookings.resource_id = slot_occupancy.resource_id
      AND bookings.starts_at = slot_occupancy.starts_at AND bookings.ends_at = slot_occupancy.ends_at
      AND bookings.status = 'pending_payment' AND bookings.occupying = 1
);
