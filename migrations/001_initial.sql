-- Berth initial schema. Portable between SQLite and PostgreSQL:
-- money is integer minor units, time is UTC epoch milliseconds (BIGINT), ids are random
-- integers below 2^53 chosen by the application (safe as JavaScript numbers).

CREATE TABLE tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    role TEXT NOT NULL CHECK (role IN ('server', 'admin')),
    key_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE TABLE bookings (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    resource_kind TEXT NOT NULL CHECK (resource_kind IN ('rental', 'experience')),
    starts_at BIGINT NOT NULL,
    ends_at BIGINT NOT NULL,
    seats INTEGER NOT NULL CHECK (seats > 0),
    price_minor BIGINT NOT NULL CHECK (price_minor >= 0),
    currency TEXT NOT NULL,
    required_product_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending_payment', 'confirmed', 'cancelled', 'refunded', 'payment_needs_refund')),
    hold_expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    confirmed_at BIGINT,
    purchase_id BIGINT,
    status_reason TEXT
);
CREATE INDEX bookings_by_resource ON bookings (tenant_id, resource_id, starts_at);
CREATE INDEX bookings_by_user ON bookings (tenant_id, user_id, created_at);
CREATE INDEX bookings_by_status ON bookings (tenant_id, status, starts_at);

CREATE TABLE purchases (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    booking_id BIGINT REFERENCES bookings (id),
    store TEXT NOT NULL,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('applied', 'needs_refund', 'refunded')),
    outcome_code TEXT,
    proof_hash TEXT NOT NULL,
    purchased_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
-- Exactly once: one row per (store, environment, transaction id), whoever claims it.
CREATE UNIQUE INDEX purchases_one_per_transaction ON purchases (store, environment, transaction_id);
CREATE INDEX purchases_by_tenant ON purchases (tenant_id, created_at);

CREATE TABLE replay_attempts (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    booking_id BIGINT,
    store TEXT NOT NULL,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    existing_purchase_id BIGINT NOT NULL REFERENCES purchases (id),
    reason TEXT NOT NULL,
    proof_hash TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX replay_attempts_by_tenant ON replay_attempts (tenant_id, at);

CREATE TABLE audit_log (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    booking_id BIGINT,
    purchase_id BIGINT,
    detail TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX audit_log_by_tenant ON audit_log (tenant_id, at);
