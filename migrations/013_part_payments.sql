-- Bookings paid by several transactions: a client that always buys one unit (quantity 1) pays an
-- N-seat booking with N purchases. paid_quantity counts the units applied so far; the booking is
-- confirmed when it reaches required_quantity. Bookings confirmed before this migration were paid in full.
ALTER TABLE bookings ADD COLUMN paid_quantity INTEGER NOT NULL DEFAULT 0;
UPDATE bookings SET paid_quantity = required_quantity WHERE confirmed_at IS NOT NULL OR purchase_id IS NOT NULL;
