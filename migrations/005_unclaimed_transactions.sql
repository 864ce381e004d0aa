-- Transactions Apple told us about before the app reported them (the app crashed, the user left).
-- They are not purchases until a user claims them through verify-purchase; a claim creates the
-- one purchases row as usual, and listings show the unclaimed row as claimed by it.
CREATE TABLE unclaimed_transactions (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    store TEXT NOT NULL,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    notification_uuid TEXT NOT NULL,
    purchased_at BIGINT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX unclaimed_transactions_one_per_transaction ON unclaimed_transactions (tenant_id, store, environment, transaction_id);
