-- The deliverer's claim walks a tenant's pending messages in order and stops after a batch: without
-- this index it sorted every pending message on each claim (3.5 s inside SQLite's write lock with
-- 53,000 waiting, found by benchmarks/soak), so a backlog slowed every write and grew itself.
CREATE INDEX webhook_outbox_claim ON webhook_outbox (tenant_id, created_at, sequence) WHERE status = 'pending' AND dead_at IS NULL;
