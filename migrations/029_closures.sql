-- Closures: a resource (or every resource of a tenant) closed for a time, for weather, a harbour
-- master's order or maintenance. No booking starts a stay inside one; the bookings already inside are
-- listed for the operator to resolve. Deleting a closure reopens the dates (the row stays, marked).
CREATE TABLE closures (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    resource_id TEXT,
    starts_at BIGINT NOT NULL,
    ends_at BIGINT NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT,
    CHECK (ends_at > starts_at)
);
CREATE INDEX closures_by_tenant ON closures (tenant_id, starts_at);
