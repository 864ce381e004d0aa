import Foundation

/// The SQL files of `migrations/`, compiled into the binary (`Package.swift` embeds each one; SwiftPM
/// names a resource `001_x.sql` `_01_x_sql`). A new migration file is added in both places;
/// `EmbeddedMigrationsTests` fails when this list and the directory differ.
public enum EmbeddedMigrations {
    public static let files: [(name: String, bytes: [UInt8])] = [
        ("001_initial.sql", PackageResources._01_initial_sql),
        ("002_receipt_checks.sql", PackageResources._02_receipt_checks_sql),
        ("003_apple_notifications.sql", PackageResources._03_apple_notifications_sql),
        ("004_webhooks.sql", PackageResources._04_webhooks_sql),
        ("005_unclaimed_transactions.sql", PackageResources._05_unclaimed_transactions_sql),
        ("006_hardening.sql", PackageResources._06_hardening_sql),
        ("007_core.sql", PackageResources._07_core_sql),
        ("008_credits.sql", PackageResources._08_credits_sql),
        ("009_subscriptions.sql", PackageResources._09_subscriptions_sql),
        ("010_key_roles.sql", PackageResources._10_key_roles_sql),
        ("011_webhook_dead_letters.sql", PackageResources._11_webhook_dead_letters_sql),
        ("012_product_kinds.sql", PackageResources._12_product_kinds_sql),
        ("013_part_payments.sql", PackageResources._13_part_payments_sql),
        ("014_unapplied_payments.sql", PackageResources._14_unapplied_payments_sql),
        ("015_account_tokens.sql", PackageResources._15_account_tokens_sql),
        ("016_card_payments.sql", PackageResources._16_card_payments_sql),
        ("017_google_play.sql", PackageResources._17_google_play_sql),
        ("018_apple_lifecycle.sql", PackageResources._18_apple_lifecycle_sql),
        ("019_subscription_offers.sql", PackageResources._19_subscription_offers_sql),
        ("020_consumption_answers.sql", PackageResources._20_consumption_answers_sql),
        ("021_booking_references.sql", PackageResources._21_booking_references_sql),
        ("022_order_ids.sql", PackageResources._22_order_ids_sql),
        ("023_outbox_claim.sql", PackageResources._23_outbox_claim_sql),
        ("024_play_pending_claims.sql", PackageResources._24_play_pending_claims_sql),
        ("025_slot_holds.sql", PackageResources._25_slot_holds_sql),
        ("026_owed_resolutions.sql", PackageResources._26_owed_resolutions_sql),
        ("027_refund_times.sql", PackageResources._27_refund_times_sql),
        ("028_inventory.sql", PackageResources._28_inventory_sql),
        ("029_closures.sql", PackageResources._29_closures_sql),
        ("030_booking_changes.sql", PackageResources._30_booking_changes_sql),
    ]
}
