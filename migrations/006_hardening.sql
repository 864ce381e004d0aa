-- Hardening (security review of 2c0cd26).
-- Transactions Apple refunded or revoked before any user claimed them: a later claim is refused.
CREATE TABLE revoked_transactions (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    store TEXT NOT NULL,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    notification_uuid TEXT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX revoked_transactions_one_per_transaction ON revoked_transactions (tenant_id, store, environment, transaction_id);

-- What was paid: the signed price (milliunits, as Apple signs it), currency and quantity.
ALTER TABLE purchases ADD COLUMN price_milliunits BIGINT;
ALTER TABLE purchases ADD COLUMN currency TEXT;
ALTER TABLE purchases ADD COLUMN quantity INTEGER;

-- How many units of its product a booking needs (seats or days when the tenant sells per unit),
-- and the environment of the purchase that confirmed it.
ALTER TABLE bookings ADD COLUMN required_quantity INTEGER NOT NULL DEFAULT 1;
ALTER TABLE bookings ADD COLUMN environment TEXT;
-- Who created it: user:<id> (a user token) or server:<key id> (a server key acting for the user).
ALTER TABLE bookings ADD COLUMN created_via TEXT;

-- Active holds per user and per server key are counted on every booking request.
CREATE INDEX bookings_holds_by_user ON bookings (tenant_id, user_id, status, hold_expires_at);
CREATE INDEX bookings_holds_by_creator ON bookings (tenant_id, created_via, status, hold_expires_at);

-- Webhook messages keep their order per subject (a booking), and give up after a number of attempts.
ALTER TABLE webhook_outbox ADD COLUMN subject TEXT;
ALTER TABLE webhook_outbox ADD COLUMN sequence BIGINT NOT NULL DEFAULT 0;
CREATE INDEX webhook_outbox_by_subject ON webhook_outbox (tenant_id, subject, sequence);
