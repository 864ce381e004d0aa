-- Subscriptions: one row per tenant and originalTransactionId with its latest period, renewal
-- status and owner; the membership each account uses (from one Apple subscription, or paid
-- elsewhere); refused cross-account claims; unlink archives; and, for tenants that opt in, the
-- latest receipt of each subscription.
ALTER TABLE purchases ADD COLUMN subscription INTEGER NOT NULL DEFAULT 0;

CREATE TABLE subscriptions (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    original_transaction_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    product_id TEXT NOT NULL,
    entitlement TEXT NOT NULL,
    tier TEXT,
    cycle TEXT,
    latest_transaction_id TEXT NOT NULL,
    purchased_at BIGINT NOT NULL,
    expires_at BIGINT,
    original_purchased_at BIGINT,
    auto_renew INTEGER CHECK (auto_renew IN (0, 1)),
    auto_renew_product_id TEXT,
    in_billing_retry INTEGER NOT NULL CHECK (in_billing_retry IN (0, 1)),
    grace_period_expires_at BIGINT,
    expiration_intent INTEGER,
    price_increase_status INTEGER,
    revoked_at BIGINT,
    upgraded INTEGER NOT NULL CHECK (upgraded IN (0, 1)),
    ended INTEGER NOT NULL CHECK (ended IN (0, 1)),
    user_id TEXT,
    signed_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, original_transaction_id)
);
CREATE INDEX subscriptions_by_user ON subscriptions (tenant_id, user_id, purchased_at);

CREATE TABLE memberships (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    original_transaction_id TEXT,
    pay_method TEXT,
    tier TEXT,
    cycle TEXT,
    expires_at BIGINT,
    auto_renew INTEGER NOT NULL CHECK (auto_renew IN (0, 1)),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
-- An Apple subscription gives at most one account its membership.
CREATE UNIQUE INDEX memberships_one_per_subscription ON memberships (tenant_id, original_transaction_id) WHERE original_transaction_id IS NOT NULL;

CREATE TABLE subscription_cheats (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    owner_user_id TEXT,
    source TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX subscription_cheats_by_tenant ON subscription_cheats (tenant_id, at);

CREATE TABLE subscription_unlinks (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    membership_snapshot TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX subscription_unlinks_by_tenant ON subscription_unlinks (tenant_id, at);

CREATE TABLE subscription_receipts (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    original_transaction_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    receipt TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, original_transaction_id)
);
