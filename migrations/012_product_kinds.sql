-- A purchase's target is one (kind, reference) pair instead of a column per product kind:
-- booking (its id), credits (the credit type), subscription (the originalTransactionId),
-- unlock (the product id). Today's rows move; the per-kind columns go. booking_id stays as the
-- booking's foreign key. Replay attempts are keyed on the target the same way.
ALTER TABLE purchases ADD COLUMN target_kind TEXT;
ALTER TABLE purchases ADD COLUMN target_ref TEXT;
UPDATE purchases SET target_kind = 'booking', target_ref = CAST(booking_id AS TEXT) WHERE booking_id IS NOT NULL;
UPDATE purchases SET target_kind = 'subscription', target_ref = original_transaction_id WHERE target_kind IS NULL AND subscription <> 0;
UPDATE purchases SET target_kind = 'credits', target_ref = credit_type WHERE target_kind IS NULL AND credit_type IS NOT NULL;
ALTER TABLE purchases DROP COLUMN credit_type;
ALTER TABLE purchases DROP COLUMN subscription;

ALTER TABLE replay_attempts ADD COLUMN target_kind TEXT;
ALTER TABLE replay_attempts ADD COLUMN target_ref TEXT;
UPDATE replay_attempts SET target_kind = 'booking', target_ref = CAST(booking_id AS TEXT) WHERE booking_id IS NOT NULL;

-- Entitlement grants with no record of their own elsewhere (one-time unlocks and passes). A
-- user's entitlements are derived from their live grants, these and the subscriptions' own.
CREATE TABLE entitlement_grants (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    entitlement TEXT NOT NULL,
    source TEXT NOT NULL,
    reference TEXT NOT NULL,
    product_id TEXT,
    environment TEXT,
    purchased_at BIGINT NOT NULL,
    starts_at BIGINT NOT NULL,
    ends_at BIGINT,
    duration_days INTEGER,
    state TEXT NOT NULL CHECK (state IN ('active', 'ended')),
    ended_reason TEXT,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX entitlement_grants_one_per_source ON entitlement_grants (tenant_id, source, reference);
CREATE INDEX entitlement_grants_by_user ON entitlement_grants (tenant_id, user_id, entitlement);
