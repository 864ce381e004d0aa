import Domain
import Foundation
import Logging

/// A whole app receipt claimed for one user, as a receipt validator must: StoreKit 1 clients
/// (cordova-plugin-purchase among them) post the receipt and then finish every transaction in it, so
/// every unapplied purchase it holds is applied now, exactly once each, not only the one the app
/// names. The receipt is verified once; each entry is claimed through ``VerifyPurchase``.
public struct ClaimReceipt: Sendable {
    public struct Command: Sendable {
        public var runtime: TenantRuntime
        public var userId: String
        /// The base64 app receipt.
        public var receipt: String
        /// The transaction the app names (the answer is about it); nil for the application receipt
        /// itself (cordova's `appstore.application`, the bundle id, or no id).
        public var transactionId: String?
        /// A booking the named transaction pays for.
        public var bookingId: Int64?

        public init(runtime: TenantRuntime, userId: String, receipt: String, transactionId: String?, bookingId: Int64?) {
            self.runtime = runtime
            self.userId = userId
            self.receipt = receipt
            self.transactionId = transactionId
            self.bookingId = bookingId
        }
    }

    public struct Result: Sendable {
        public var receipt: ProvenReceipt
        /// The named transaction's claim.
        public var named: VerifyPurchase.Result?
        /// The receipt's other purchases this call applied for the user.
        public var applied: [VerifyPurchase.Result]
    }

    let store: any Store
    let prover: PurchaseProver
    let claims: Claims
    let logger: Logger

    public init(store: any Store, prover: PurchaseProver, claims: Claims, logger: Logger) {
        self.store = store
        self.prover = prover
        self.claims = claims
        self.logger = logger
    }

    /// Verifies the receipt, claims the named transaction, then every other unapplied purchase. A
    /// refusal of the named transaction is thrown after the others were applied (the client will not
    /// finish it and sends the receipt again); an entry nobody can use now (another account's
    /// purchase on a shared device, a product this app does not sell) is left as it is.
    public func callAsFunction(_ command: Command) async throws -> Result {
        let runtime = command.runtime
        let receipt = try await AppStoreProofs(logger: prover.logger).proveReceipt(command.receipt, runtime: runtime)
        var named: VerifyPurchase.Result?
        var namedError: (any Error)?
        if let id = command.transactionId {
            guard let entry = receipt.transactions.first(where: { $0.transactionId == id }) else {
                throw DomainError(.unprocessable, .transactionNotInReceipt, "the receipt holds no transaction \(id)", field: "transactionId")
            }
            do {
                named = try await claims.claim(
                    proven: entry,
                    runtime: runtime,
                    userId: command.userId,
                    named: command.bookingId.map { .booking(id: $0) }
                )
            } catch {
                namedError = error
            }
        }
        var applied: [VerifyPurchase.Result] = []
        let namedOriginal = receipt.transactions.first { $0.transactionId == command.transactionId }?.originalTransactionId
        for entry in Self.unapplied(receipt.transactions, tenant: runtime.tenant, except: command.transactionId, exceptOriginal: namedOriginal) {
            let known = try await store.read { tx in
                try tx.purchases.purchase(store: .appStore, environment: entry.environment, transactionId: entry.transactionId, forUpdate: false)
                    != nil
            }
            if known { continue }
            do {
                let result = try await claims.claim(proven: entry, runtime: runtime, userId: command.userId, named: nil)
                if case .applied = result.outcome { applied.append(result) }
            } catch let error as DomainError where error.kind != .unavailable {
                logger.info(
                    "receipt entry left unapplied",
                    metadata: ["transaction": .string(entry.transactionId), "code": .string(error.code.rawValue)]
                )
            }
        }
        if let namedError { throw namedError }
        return Result(receipt: receipt, named: named, applied: applied)
    }

    /// The entries a receipt call applies besides the named one: each consumable, unlock and pass;
    /// the newest period of each subscription (older renewals add nothing); not bookings (a booking
    /// is paid by the call that names it) nor entries the receipt shows refunded.
    static func unapplied(_ entries: [ProvenTransaction], tenant: Tenant, except named: String?, exceptOriginal: String?) -> [ProvenTransaction] {
        var others: [ProvenTransaction] = []
        var subscriptions: [String: ProvenTransaction] = [:]
        for entry in entries where entry.transactionId != named && !entry.revoked {
            switch tenant.product(id: entry.productId)?.kind {
            case .booking:
                continue
            case .subscription:
                if entry.originalTransactionId == exceptOriginal { continue }
                if let kept = subscriptions[entry.originalTransactionId], (kept.purchasedAt ?? .distantPast) >= (entry.purchasedAt ?? .distantPast) {
                    continue
                }
                subscriptions[entry.originalTransactionId] = entry
            default:
                others.append(entry)
            }
        }
        return others + subscriptions.values.sorted { ($0.purchasedAt ?? .distantPast) < ($1.purchasedAt ?? .distantPast) }
    }
}
