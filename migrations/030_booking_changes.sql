-- A move that costs more waits for the difference: the difference is a booking of its own (a hold
-- at the new place, paid through the usual rails) that names the booking it changes. Once paid,
-- its payments pass to that booking, which moves to the new place, and the hold is gone.
ALTER TABLE bookings ADD COLUMN change_of BIGINT;
CREATE INDEX bookings_by_change_of ON bookings (change_of) WHERE change_of IS NOT NULL;
