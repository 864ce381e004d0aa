-- What a subscription's latest renewal info and transaction say beyond its period: the win-back
-- offers Apple lets the customer redeem (a JSON array of offer ids; NULL for none), and whether the
-- owner has it through Family Sharing rather than by paying.
ALTER TABLE subscriptions ADD COLUMN eligible_win_back_offer_ids TEXT;
ALTER TABLE subscriptions ADD COLUMN family_shared INTEGER NOT NULL DEFAULT 0 CHECK (family_shared IN (0, 1));
