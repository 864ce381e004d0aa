-- Inventory as data: each tenant's resources (boats, experiences) as products.json writes them,
-- changed while Berth runs and seen by every instance. products.json's resources seed it (only the
-- ones a tenant does not have yet); a resource is retired, never deleted, so its bookings keep it.
CREATE TABLE inventory_resources (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    resource_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    body TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, resource_id)
);
-- One row per tenant with an inventory: its version moves on with every change, and each instance
-- reads all of them once a second to see what changed elsewhere.
CREATE TABLE inventory_versions (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants (id),
    version BIGINT NOT NULL
);
