-- Webhook delivery gives up after a capped number of attempts: the message is set aside (dead_at),
-- no longer claimed, until an operator re-sends it. Deliverers claim per tenant.
ALTER TABLE webhook_outbox ADD COLUMN dead_at BIGINT;
CREATE INDEX webhook_outbox_by_tenant_due ON webhook_outbox (tenant_id, status, next_attempt_at);
