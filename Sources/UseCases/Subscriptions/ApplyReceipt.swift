import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// Verifies an app receipt and applies every subscription it shows (verify-receipt, FT Chinese's
/// receipt routes, a refresh from a kept receipt).
public struct ApplyReceipt: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// What a receipt told Berth.
    public struct Result: Sendable {
        public var subscriptions: [Subscription]
        /// Subscriptions of the receipt that belong to another account (a cheat attempt was recorded).
        public var ownedByOthers: [Subscription]
        public var environment: StoreEnvironment
        public var receiptSHA256: String
        /// Apple's verifyReceipt answer, when Berth asked Apple.
        public var appleResponse: Data?
        public var verified: VerifiedReceipt
    }

    /// Verifies a receipt (offline; then with Apple's verifyReceipt when the tenant has a shared
    /// secret, falling back to the offline result), applies every subscription it shows and attaches
    /// them to `userId`. Keeps the receipt for tenants that opted in.
    public func callAsFunction(
        _ base64: String,
        runtime: TenantRuntime,
        userId: String?,
        actor: Actor,
        source: String,
        environment required: StoreEnvironment? = nil
    ) async throws -> Result {
        let verified: VerifiedReceipt
        do {
            verified = try await runtime.appStore.receiptVerifier.verify(base64: base64, expecting: runtime.appStore.expectations)
        } catch {
            throw DomainError(error, field: "receiptData", messagePrefix: "the receipt did not verify: ")
        }
        let accepted = runtime.tenant.apple.environments
        guard let environment = verified.receipt.environment.map(StoreEnvironment.init) ?? (accepted.count == 1 ? accepted.first : nil) ?? required
        else {
            throw DomainError(.unprocessable, .wrongEnvironment, "the receipt does not say whether it is Production or Sandbox", field: "receiptData")
        }
        if let required, environment != required {
            throw DomainError(
                .unprocessable,
                .wrongEnvironment,
                "this is a \(environment) receipt; send it to the \(environment) base",
                field: "receiptData"
            )
        }
        let now = clock.now()
        var facts = SubscriptionFactsReading.facts(
            receipt: verified.receipt,
            environment: environment,
            signedAt: verified.receipt.creationDate?.date ?? now,
            source: source
        )
        var appleResponse: Data?
        if let client = runtime.appStore.verifyReceiptClient {
            do {
                let response = try await client.verify(receiptData: base64, excludeOldTransactions: false)
                let online = SubscriptionFactsReading.facts(verifyReceipt: response, signedAt: now)
                if !online.isEmpty { facts = online }
                appleResponse = response.raw
            } catch {
                logger.warning("verifyReceipt not reachable or refused; using the offline result", metadata: ["code": .string(error.code.rawValue)])
            }
        }
        let tenant = runtime.tenant, emitsEvents = runtime.webhook != nil, keep = tenant.subscriptions?.keepReceipts == true
        let knownProducts = Set(tenant.products.filter { $0.kind == .subscription }.map(\.id))
        let relevant = facts.filter { knownProducts.isEmpty || knownProducts.contains($0.transaction?.productId ?? "") }
        let outcomes = try await store.write { tx in
            try relevant.map { fact -> SubscriptionWrites.Outcome in
                let outcome = try SubscriptionWrites.apply(
                    tx,
                    facts: fact,
                    tenant: tenant,
                    userId: userId,
                    source: source,
                    actor: actor,
                    emitsEvents: emitsEvents,
                    now: now
                )
                if keep, case .applied = outcome {
                    try tx.subscriptions.saveReceipt(
                        tenantId: tenant.id,
                        originalTransactionId: fact.originalTransactionId,
                        environment: environment,
                        receipt: base64,
                        at: now
                    )
                }
                return outcome
            }
        }
        var result = Result(
            subscriptions: [],
            ownedByOthers: [],
            environment: environment,
            receiptSHA256: verified.sha256,
            appleResponse: appleResponse,
            verified: verified
        )
        for outcome in outcomes {
            switch outcome {
            case .applied(let s, _): result.subscriptions.append(s)
            case .ownedByOther(let s): result.ownedByOthers.append(s)
            case .nothing: break
            }
        }
        return result
    }
}
