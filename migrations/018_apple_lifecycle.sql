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

-- How far each tenant's Get Notification History reading got, per environment: the next reading
-- starts there (with an overlap), so notifications Apple sent while Berth was down are recovered.
CREATE TABLE apple_history_marks (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    environment TEXT NOT NULL,
    checked_until BIGINT NOT NULL,
    checked_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, environment)
);
