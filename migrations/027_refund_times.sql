-- When a purchase's money went back (a store's refund notice, a full card refund), so that the
-- operator's overview counts a refund on the day it happened, not on the day of the purchase.
-- Purchases refunded before this column existed keep their purchase day (nothing better is known).
ALTER TABLE purchases ADD COLUMN refunded_at BIGINT;
UPDATE purchases SET refunded_at = purchased_at WHERE status = 'refunded';
CREATE INDEX purchases_refunded ON purchases (tenant_id, refunded_at) WHERE refunded_at IS NOT NULL;
