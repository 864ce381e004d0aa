-- Outbound webhooks: events are written here in the same transaction as the change they report,
-- then delivered (and retried) by the delivery service; every attempt is logged.
CREATE TABLE webhook_outbox (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'skipped')),
    attempts INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    delivered_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_attempt_at);

CREATE TABLE webhook_deliveries (
    id BIGINT PRIMARY KEY,
    outbox_id BIGINT NOT NULL REFERENCES webhook_outbox (id),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    event_type TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status_code INTEGER,
    error TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_by_tenant ON webhook_deliveries (tenant_id, at);
