-- Credits: products operators edit at run time (seeded from products.json), one balance row per
-- user and credit type, the ledger (every change of a balance is one entry), lots (the credits one
-- grant brought, spent oldest first) and their uses (which entry took which credits, for which
-- profile), reservations (credits held for work in progress) and the once-per-user signup bonus.
ALTER TABLE purchases ADD COLUMN credit_type TEXT;
ALTER TABLE purchases ADD COLUMN credits BIGINT;

CREATE TABLE credit_products (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    product_id TEXT NOT NULL,
    credit_type TEXT NOT NULL,
    credits BIGINT NOT NULL CHECK (credits > 0),
    title TEXT NOT NULL,
    description TEXT,
    price_minor BIGINT CHECK (price_minor >= 0),
    currency TEXT NOT NULL,
    display_order INTEGER NOT NULL,
    active INTEGER NOT NULL CHECK (active IN (0, 1)),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, product_id)
);

CREATE TABLE credit_balances (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    credit_type TEXT NOT NULL,
    balance BIGINT NOT NULL,
    debt BIGINT NOT NULL CHECK (debt >= 0),
    -- Entries the account has had: the next entry's sequence number.
    entries BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, credit_type)
);

CREATE TABLE credit_ledger (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    credit_type TEXT NOT NULL,
    -- Position within its account (1, 2, …): orders entries written in the same millisecond.
    sequence BIGINT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('purchase', 'bonus', 'usage', 'refund', 'refund_reversal', 'adjustment', 'debt_settlement')),
    amount BIGINT NOT NULL,
    debt_change BIGINT NOT NULL,
    balance_after BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('completed', 'refunded')),
    actor TEXT NOT NULL,
    reason TEXT,
    product_id TEXT,
    transaction_id TEXT,
    purchase_id BIGINT REFERENCES purchases (id),
    reservation_id BIGINT,
    profile_id TEXT,
    reference TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX credit_ledger_by_user ON credit_ledger (tenant_id, user_id, created_at);
CREATE UNIQUE INDEX credit_ledger_one_per_position ON credit_ledger (tenant_id, user_id, credit_type, sequence);
CREATE INDEX credit_ledger_by_tenant ON credit_ledger (tenant_id, created_at);
CREATE INDEX credit_ledger_by_purchase ON credit_ledger (purchase_id) WHERE purchase_id IS NOT NULL;
-- A reservation is spent by one usage entry at most.
CREATE UNIQUE INDEX credit_ledger_one_usage_per_reservation ON credit_ledger (reservation_id) WHERE reservation_id IS NOT NULL;

CREATE TABLE credit_lots (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    credit_type TEXT NOT NULL,
    entry_id BIGINT NOT NULL REFERENCES credit_ledger (id),
    purchase_id BIGINT REFERENCES purchases (id),
    amount BIGINT NOT NULL CHECK (amount > 0),
    remaining BIGINT NOT NULL CHECK (remaining >= 0 AND remaining <= amount),
    granted_at BIGINT NOT NULL,
    consumed_at BIGINT,
    refunded_at BIGINT
);
CREATE INDEX credit_lots_open ON credit_lots (tenant_id, user_id, credit_type, granted_at) WHERE remaining > 0;
CREATE INDEX credit_lots_by_user ON credit_lots (tenant_id, user_id, credit_type, granted_at);
CREATE INDEX credit_lots_by_purchase ON credit_lots (purchase_id) WHERE purchase_id IS NOT NULL;

CREATE TABLE credit_lot_uses (
    entry_id BIGINT NOT NULL REFERENCES credit_ledger (id),
    lot_id BIGINT NOT NULL REFERENCES credit_lots (id),
    amount BIGINT NOT NULL CHECK (amount > 0),
    profile_id TEXT,
    at BIGINT NOT NULL,
    PRIMARY KEY (entry_id, lot_id)
);
CREATE INDEX credit_lot_uses_by_lot ON credit_lot_uses (lot_id);

CREATE TABLE credit_reservations (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    credit_type TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('held', 'committed', 'released', 'expired')),
    reference TEXT,
    profile_id TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    settled_at BIGINT,
    entry_id BIGINT REFERENCES credit_ledger (id)
);
CREATE INDEX credit_reservations_held ON credit_reservations (tenant_id, user_id, credit_type, expires_at) WHERE status = 'held';
-- One live reservation per app reference: a retried reserve finds it instead of holding twice.
CREATE UNIQUE INDEX credit_reservations_live_reference ON credit_reservations (tenant_id, user_id, reference)
    WHERE reference IS NOT NULL AND status IN ('held', 'committed');

CREATE TABLE credit_bonuses (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
