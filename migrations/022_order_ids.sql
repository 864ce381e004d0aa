-- The store's order number of a purchase where the proof names one (Google Play's `GPA.…`), so an
-- operator can find a purchase by what the customer's receipt email shows. NULL for the others.
ALTER TABLE purchases ADD COLUMN order_id TEXT;
CREATE INDEX purchases_order_id ON purchases (tenant_id, order_id);
CREATE INDEX purchases_original_transaction ON purchases (tenant_id, original_transaction_id);
CREATE INDEX purchases_user ON purchases (tenant_id, user_id, purchased_at);
-- Operators' search and a customer's timeline look purchases up by transaction id within the tenant.
CREATE INDEX purchases_by_transaction ON purchases (tenant_id, transaction_id);
CREATE INDEX card_payments_by_user ON card_payments (tenant_id, user_id, created_at);
CREATE INDEX unapplied_payments_by_user ON unapplied_payments (tenant_id, user_id, first_seen_at);
CREATE INDEX audit_log_by_booking ON audit_log (booking_id) WHERE booking_id IS NOT NULL;
CREATE INDEX audit_log_by_purchase ON audit_log (purchase_id) WHERE purchase_id IS NOT NULL;
