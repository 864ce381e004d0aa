-- Paid is never silent: a proven, paid transaction that could not be applied (the booking is gone or
-- not the user's, the product is not the one named or not sold here, the account token names
-- another account...) is kept here with its reason until an operator applies it or marks it for a
-- refund. One row per transaction; a retry of the same refusal counts an attempt. `proven` is what
-- the proof established (JSON), so that an operator's apply needs no proof again.
CREATE TABLE unapplied_payments (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    store TEXT NOT NULL,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    quantity BIGINT NOT NULL,
    price_milliunits BIGINT,
    currency TEXT,
    user_id TEXT NOT NULL,
    booking_id BIGINT,
    reason_code TEXT NOT NULL,
    reason TEXT NOT NULL,
    proof_hash TEXT NOT NULL,
    proven TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    status TEXT NOT NULL,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    resolved_at BIGINT,
    resolved_by TEXT,
    purchase_id BIGINT,
    note TEXT
);
CREATE UNIQUE INDEX unapplied_payments_one_per_transaction ON unapplied_payments (tenant_id, store, environment, transaction_id);
CREATE INDEX unapplied_payments_by_status ON unapplied_payments (tenant_id, status, last_seen_at);
