import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// Answers Apple's CONSUMPTION_REQUESTs (Send Consumption Information V2) for tenants that opted in
/// (`apple.answerConsumptionRequests`, `apple.serverAPI`), durably: each request owes one answer
/// (``ConsumptionAnswer``, keyed by the request's uuid, so Apple's retries and the history job owe
/// nothing more), tried when the request arrives and, after a failed call, again by any instance
/// (leased) until it is sent, refused for lack of the customer's consent, or Apple's 12-hour window
/// closes.
public struct ConsumptionAnswers: Sendable {
    /// What one attempt came to (`berth_consumption_answers_total{outcome}`).
    public enum Outcome: String, Sendable {
        /// Apple has it.
        case sent
        /// The call failed; it is tried again (within the window).
        case failed
        /// The window closed (or no further try fits in it) before a call succeeded.
        case expired
        /// The customer had not consented: Apple is told nothing.
        case noConsent = "no_consent"
        /// The tenant does not answer consumption requests.
        case notConfigured = "not_configured"
    }

    /// Apple wants consumption information within 12 hours of its request.
    public static let window: TimeInterval = 12 * 3600
    /// How long one attempt holds its answer against other instances.
    static let lease: TimeInterval = 120

    let store: any Store
    let clock: any BerthClock
    let logger: Logger
    /// This instance's name on the answers it leases.
    let owner: String

    public init(store: any Store, clock: any BerthClock, logger: Logger, owner: String) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.owner = owner
    }

    /// Whether a tenant answers consumption requests.
    public static func answers(_ runtime: TenantRuntime) -> Bool {
        runtime.tenant.apple.answerConsumptionRequests == true && runtime.appStore.serverAPI != nil
    }

    /// The wait after `attempts` failed calls: 30 s, 2 min, 10 min, 30 min, then hourly.
    static func backoff(afterAttempts attempts: Int) -> TimeInterval { JobRetry.consumptionAnswers.delay(afterAttempts: attempts) }

    /// A CONSUMPTION_REQUEST arrived (from Apple or the history job): the answer is owed, once per
    /// request, and tried now. Nil when the request was already owed (a retry of it changes nothing).
    public func requested(_ notification: IncomingNotification, runtime: TenantRuntime) async -> Outcome? {
        guard Self.answers(runtime), let transactionId = notification.transactionId else { return .notConfigured }
        let now = clock.now()
        let answer = ConsumptionAnswer(
            id: RecordID.next(),
            tenantId: runtime.id,
            environment: notification.environment,
            transactionId: transactionId,
            notificationUUID: notification.uuid,
            requestedAt: notification.signedAt,
            nextAttemptAt: now,
            createdAt: now
        )
        do {
            let owed = try await store.write { [owner] tx in
                try tx.consumptionAnswers.enqueue(answer, owner: owner, leaseUntil: now.addingTimeInterval(Self.lease))
            }
            guard owed else { return nil }
        } catch {
            // Apple retries the notification when Berth answers it with an error; here it is stored
            // already, so the request is logged and counted: the history job's next reading owes it again.
            logger.error("consumption answer not recorded: \(error)", metadata: ["transaction": .string(transactionId)])
            return .failed
        }
        return await attempt(answer, runtime: runtime)
    }

    /// The background round: every due answer of every tenant, tried once each.
    public func runDue(tenants: TenantRegistry, limit: Int = 50) async -> [(tenantId: String, outcome: Outcome)] {
        let now = clock.now()
        let due: [ConsumptionAnswer]
        do {
            due = try await store.write { [owner] tx in
                try tx.consumptionAnswers.claimDue(now: now, limit: limit, owner: owner, leaseUntil: now.addingTimeInterval(Self.lease))
            }
        } catch {
            logger.warning("consumption answers not read: \(error)")
            return []
        }
        var outcomes: [(tenantId: String, outcome: Outcome)] = []
        for answer in due {
            guard let runtime = tenants.tenant(id: answer.tenantId), Self.answers(runtime) else {
                // The tenant stopped answering (or left the catalog): nothing will be sent.
                await record(answer, .expired, error: "the tenant no longer answers consumption requests", next: now)
                outcomes.append((answer.tenantId, .expired))
                continue
            }
            outcomes.append((answer.tenantId, await attempt(answer, runtime: runtime)))
        }
        return outcomes
    }

    /// Whether any tenant answers consumption requests (the background round has work).
    public static func hasWork(_ tenants: TenantRegistry) -> Bool { tenants.ordered.contains(where: answers) }

    /// One call to Apple with what Berth knows of the purchase now.
    func attempt(_ answer: ConsumptionAnswer, runtime: TenantRuntime) async -> Outcome {
        let now = clock.now()
        let deadline = answer.requestedAt.addingTimeInterval(Self.window)
        guard now < deadline, let api = runtime.appStore.serverAPI else {
            await record(answer, .expired, error: "Apple's 12-hour window closed before an answer was sent", next: now)
            return .expired
        }
        let tenant = runtime.tenant
        let tenantId = runtime.id
        let transactionId = answer.transactionId
        do {
            let known: (Purchase?, Booking?, CreditLot?, ConsumptionConsent?) = try await store.read { tx in
                guard
                    let purchase = try tx.purchases.purchase(
                        store: .appStore,
                        environment: answer.environment,
                        transactionId: transactionId,
                        forUpdate: false
                    ),
                    purchase.tenantId == tenantId
                else { return (nil, nil, nil, nil) }
                let booking = try purchase.bookingId.flatMap { try tx.bookings.booking(id: $0, tenantId: tenantId, forUpdate: false) }
                let lot = purchase.creditType == nil ? nil : try tx.credits.grant(purchaseId: purchase.id, tenantId: tenantId)?.lot
                return (purchase, booking, lot, try tx.consents.consent(tenantId: tenantId, userId: purchase.userId))
            }
            // Without the customer's consent Apple must not be told (and refuses the call).
            guard let consent = known.3, consent.consented else {
                logger.info("consumption information not sent: no consent recorded", metadata: ["transaction": .string(transactionId)])
                await record(answer, .noConsent, error: nil, next: now)
                return .noConsent
            }
            let product = known.0.flatMap { purchase in tenant.products.first { $0.id == purchase.productId } }
            let report = ConsumptionReport(
                purchase: known.0,
                product: product,
                booking: known.1,
                lot: known.2,
                preference: tenant.apple.refundPreference,
                now: now
            )
            try await api.sendConsumptionInformation(
                transactionId,
                body: try JSONEncoder().encode(report),
                environment: AppStoreEnvironment(answer.environment)
            )
            logger.info(
                "consumption information sent",
                metadata: [
                    "transaction": .string(transactionId), "consumption": .stringConvertible(report.consumptionPercentage ?? -1),
                    "textVersion": .string(consent.textVersion), "attempt": .stringConvertible(answer.attempts + 1),
                ]
            )
            await record(answer, .sent, error: nil, next: now)
            return .sent
        } catch {
            let next = now.addingTimeInterval(Self.backoff(afterAttempts: answer.attempts + 1))
            guard next < deadline else {
                logger.warning(
                    "consumption information not sent, and no time is left in Apple's window: \(error)",
                    metadata: ["transaction": .string(transactionId)]
                )
                await record(answer, .expired, error: "\(error)", next: now)
                return .expired
            }
            logger.warning(
                "consumption information not sent; tried again at \(BerthJSON.timestamp(next)): \(error)",
                metadata: ["transaction": .string(transactionId)]
            )
            await record(answer, .pending, error: "\(error)", next: next)
            return .failed
        }
    }

    private func record(_ answer: ConsumptionAnswer, _ status: ConsumptionAnswer.Status, error: String?, next: Date) async {
        let now = clock.now()
        do {
            try await store.write { tx in try tx.consumptionAnswers.record(answer, status: status, error: error, nextAttemptAt: next, now: now) }
        } catch {
            // The lease runs out and another round tries it again: at worst Apple hears twice.
            logger.warning("consumption answer's attempt not recorded: \(error)", metadata: ["transaction": .string(answer.transactionId)])
        }
    }
}

private extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
