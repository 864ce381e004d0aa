-- The App Store lifecycle beyond the first claim.
-- Whether each user agreed, in the app, that the app may tell Apple about their use of a purchase
-- when they ask for a refund (Send Consumption Information requires that consent). The latest
-- answer per user; every change is also in the audit log.
CREATE TABLE consumption_consents (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    consented INTEGER NOT NULL,
    text_version TEXT NOT NULL,
    recorded_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
