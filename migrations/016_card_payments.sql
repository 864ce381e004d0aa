-- The card rail (bookings paid by card, Apple Pay or Google Pay through Stripe). A card payment is
-- one PaymentIntent: created by Berth for one booking (at most one open per booking), moved only
-- forward by the provider's signed events or a fetch of the PaymentIntent, its success recorded as
-- a purchase of store 'stripe' (the purchases' unique index keeps it exactly once). A deposit
-- (purpose 'deposit') is authorized at check-in, then captured in part or released; it pays nothing.
CREATE TABLE card_payments (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    booking_id BIGINT NOT NULL REFERENCES bookings (id),
    user_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    provider TEXT NOT NULL,
    environment TEXT NOT NULL,
    provider_ref TEXT,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    status TEXT NOT NULL,
    provider_status TEXT,
    amount_refunded BIGINT NOT NULL DEFAULT 0,
    amount_captured BIGINT NOT NULL DEFAULT 0,
    capture_before BIGINT,
    dispute_status TEXT,
    idempotency_key TEXT NOT NULL,
    purchase_id BIGINT,
    next_check_at BIGINT,
    check_failures BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    last_event_at BIGINT
);
CREATE UNIQUE INDEX card_payments_by_provider_ref ON card_payments (provider, environment, provider_ref);
CREATE UNIQUE INDEX card_payments_by_idempotency_key ON card_payments (tenant_id, idempotency_key);
-- At most one payment of each purpose (the booking's price, a deposit) per booking that Berth still waits for.
CREATE UNIQUE INDEX card_payments_one_open ON card_payments (tenant_id, booking_id, purpose) WHERE status IN ('creating', 'open', 'authorized');
CREATE INDEX card_payments_by_booking ON card_payments (tenant_id, booking_id, created_at);
CREATE INDEX card_payments_due ON card_payments (next_check_at) WHERE status IN ('creating', 'open', 'authorized');

-- Refunds Berth asks the provider for, recorded before it asks (the key is fixed: a retry refunds once).
CREATE TABLE card_refunds (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    payment_id BIGINT NOT NULL REFERENCES card_payments (id),
    provider_ref TEXT,
    amount_minor BIGINT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    initiated_by TEXT NOT NULL,
    actor TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX card_refunds_by_idempotency_key ON card_refunds (tenant_id, idempotency_key);
CREATE INDEX card_refunds_by_payment ON card_refunds (payment_id);
CREATE INDEX card_refunds_due ON card_refunds (next_attempt_at) WHERE status = 'pending';

-- Every provider event once (redeliveries and concurrent duplicates change nothing).
CREATE TABLE payment_events (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    provider TEXT NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    object_id TEXT NOT NULL,
    created BIGINT NOT NULL,
    livemode INTEGER NOT NULL,
    received_at BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    PRIMARY KEY (tenant_id, provider, event_id)
);
