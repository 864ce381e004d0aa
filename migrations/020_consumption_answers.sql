-- The answers Berth owes Apple's CONSUMPTION_REQUESTs (Send Consumption Information), one per
-- request uuid: tried at once, then again by any instance (leased) until sent, refused for lack of
-- the customer's consent, or past Apple's 12-hour window.
CREATE TABLE consumption_answers (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    notification_uuid TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt_at BIGINT NOT NULL,
    lease_owner TEXT,
    leased_until BIGINT,
    created_at BIGINT NOT NULL,
    done_at BIGINT
);
CREATE UNIQUE INDEX consumption_answers_once ON consumption_answers (tenant_id, notification_uuid);
CREATE INDEX consumption_answers_due ON consumption_answers (next_attempt_at) WHERE status = 'pending';
CREATE INDEX consumption_answers_transaction ON consumption_answers (tenant_id, transaction_id);
