-- Key roles and lifecycle: `client` keys (safe to ship in an app), per-key scopes narrower than the
-- role, a label, expiry (rotation keeps the old key valid until then), revocation and last use.
-- SQLite cannot change a CHECK constraint in place, so the table is rebuilt (portable SQL).

CREATE TABLE api_keys_v2 (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    role TEXT NOT NULL CHECK (role IN ('client', 'server', 'admin')),
    key_hash TEXT NOT NULL UNIQUE,
    -- Shown in listings so operators can tell keys apart; never the key itself.
    name TEXT NOT NULL DEFAULT '',
    -- Space-separated scopes; NULL means everything the role allows.
    scopes TEXT,
    -- The first characters of the key (`berth_<tenant>_abcd`), to recognise it in a listing.
    hint TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT,
    last_used_at BIGINT,
    -- The key this one replaced by rotation.
    rotated_from BIGINT
);

INSERT INTO api_keys_v2 (id, tenant_id, role, key_hash, created_at, revoked_at)
    SELECT id, tenant_id, role, key_hash, created_at, revoked_at FROM api_keys;

DROP TABLE api_keys;

ALTER TABLE api_keys_v2 RENAME TO api_keys;

CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at);
