-- Automatic attribution: which user an appAccountToken names. Recorded on every applied claim (the
-- proof's token, and the tokens clients derive from the user id, such as cordova-plugin-purchase's
-- obfuscated username), so that a transaction Berth learns of without a claim (a notification) is
-- applied to its user at once; the first user a token was seen with keeps it.
CREATE TABLE account_tokens (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    token TEXT NOT NULL,
    user_id TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, token)
);
-- Unclaimed transactions keep their token and what their signed transaction proved (JSON), so that
-- they can be claimed for the user the token names, now or at that user's next call.
ALTER TABLE unclaimed_transactions ADD COLUMN app_account_token TEXT;
ALTER TABLE unclaimed_transactions ADD COLUMN proven TEXT;
CREATE INDEX unclaimed_transactions_by_token ON unclaimed_transactions (tenant_id, app_account_token);
