-- Receipt checks of POST /api/verify-receipt: only the receipt's SHA-256 is kept, never the receipt.
CREATE TABLE receipt_checks (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT,
    receipt_sha256 TEXT NOT NULL,
    outcome TEXT NOT NULL,
    is_premium INTEGER NOT NULL,
    product_id TEXT,
    expires_at BIGINT,
    at BIGINT NOT NULL
);
CREATE INDEX receipt_checks_by_tenant ON receipt_checks (tenant_id, at);
