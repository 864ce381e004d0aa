-- A Google Play one-time purchase that still waited for payment (cash, a bank transfer) when the app
-- sent it: who sent it and for what, so that when Google tells of the completed payment
-- (ONE_TIME_PRODUCT_PURCHASED) Berth applies it to that user without the app, which may be closed
-- by then. One row per token; the claim's purchase row, once applied, keeps the token exactly once.
CREATE TABLE play_pending_claims (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    purchase_token TEXT NOT NULL,
    user_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    booking_id BIGINT,
    package_name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, purchase_token)
);
