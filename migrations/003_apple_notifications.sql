-- App Store Server Notifications v2, one row per notification (redeliveries share the uuid).
CREATE TABLE apple_notifications (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    notification_uuid TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    subtype TEXT,
    environment TEXT NOT NULL,
    signed_at BIGINT NOT NULL,
    transaction_id TEXT,
    outcome TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX apple_notifications_one_per_uuid ON apple_notifications (tenant_id, notification_uuid);
CREATE INDEX apple_notifications_by_tenant ON apple_notifications (tenant_id, received_at);
