-- How an operator closed what a booking owed its customer (money paid for a booking that will not
-- take place): the customer was told how to ask the store for the refund, got something else, or was
-- refunded some other way. What is owed is worked out from the bookings, purchases and card payments;
-- this row only closes it. One per booking.
CREATE TABLE owed_resolutions (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    booking_id BIGINT NOT NULL,
    how TEXT NOT NULL,
    note TEXT,
    actor TEXT NOT NULL,
    resolved_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, booking_id)
);
