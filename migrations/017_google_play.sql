-- Google Play. Its purchases are rows of `purchases` with store 'google_play' (the purchase token is
-- the transaction id: the unique index keeps each token exactly once). What Berth still owes Google
-- for each of them (an acknowledgement, or a consumption for consumables) is written in the unit of
-- work that applied the purchase and done by a background job, retried until Google says done:
-- Google refunds a purchase not acknowledged within three days.
CREATE TABLE play_acknowledgements (
    id BIGINT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    package_name TEXT NOT NULL,
    google_product_id TEXT NOT NULL,
    purchase_token TEXT NOT NULL,
    action TEXT NOT NULL,
    purchase_id BIGINT,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt_at BIGINT NOT NULL,
    lease_owner TEXT,
    leased_until BIGINT,
    purchased_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    done_at BIGINT
);
CREATE UNIQUE INDEX play_acknowledgements_once ON play_acknowledgements (tenant_id, purchase_token, action);
CREATE INDEX play_acknowledgements_due ON play_acknowledgements (next_attempt_at) WHERE status = 'pending';

-- Real-time developer notifications are recorded in `notifications` (uuid `google_play:<Pub/Sub message id>`,
-- a voided purchase found by the sweep as `google_play:voided:<token hash>`): redeliveries change nothing.

-- Where each package's voided-purchases sweep got to (the newest voided time it has seen).
CREATE TABLE play_sweeps (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    package_name TEXT NOT NULL,
    voided_since BIGINT NOT NULL,
    swept_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, package_name)
);

-- Which store a subscription is from (its original transaction id is Apple's, or a Play purchase token).
ALTER TABLE subscriptions ADD COLUMN store TEXT NOT NULL DEFAULT 'app_store';
