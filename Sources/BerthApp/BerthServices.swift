import Domain
import Foundation
import HTTPAPI
import Logging
import UseCases

/// The composition root's product: the tenants, the store (timed in this instance's metrics), the
/// clock, every use case over them, and the settings of the background work. The routes are given
/// their use cases from here (``RouteServices``); the workers theirs (``buildApplication``).
public struct BerthServices: RouteServices {
    public var tenants: TenantRegistry
    public var store: any Store
    public var clock: any BerthClock
    public var logger: Logger
    /// Users whose account tokens this process has recorded (see ``RecordedTokenUsers``).
    public let recordedTokens: RecordedTokenUsers
    /// When a validation may read a user's App Store history (once per user per 10 minutes).
    public let catchUps: CatchUpThrottle
    /// This instance's metrics (`GET /metrics`).
    public let metrics: BerthMetrics
    public var metricsToken: Secret?
    /// The reverse proxies whose `X-Forwarded-For` names the client (`BERTH_TRUSTED_PROXIES`).
    public var trustedProxies = TrustedProxies()
    /// The product kinds Berth sells (each one a module of `UseCases/Kinds`).
    public var kinds: PurchaseKinds = .all
    /// The migrations the code expects: `/readyz` fails while one of them is not applied.
    public var expectedMigrations: Set<String> = []
    /// Who may call each route, filled as the router is built (the access test reads it).
    public let routeAccess = RouteAccessTable()
    /// How often the card rail's jobs run (nil: not in the background; tests run them by hand).
    public var cardPaymentJobsInterval: Duration? = .seconds(1)
    /// How often Google Play's acknowledgements are tried (nil: not in the background; tests run them by hand).
    public var playJobsInterval: Duration? = .seconds(1)
    /// How often the inventory is read for what other instances changed (nil: never; tests call
    /// `manageInventory.refresh()` themselves). `BERTH_INVENTORY_REFRESH_MS`, default 500.
    public var inventoryRefreshInterval: Duration? = .milliseconds(500)
    /// Subjects of one tenant whose webhooks are in flight at once (`BERTH_WEBHOOK_PARALLEL`, 1 to 64).
    public var webhookParallel = DeliverWebhooks.defaultPerTenant
    /// How often the notification-history worker looks for tenants due a reading (nil: not in the background; tests run it by hand).
    public var appleHistoryTick: Duration? = .seconds(30)
    /// API keys presented to this instance (cached briefly; revocations reach it within seconds).
    public let keys: APIKeyResolver

    public init(tenants: TenantRegistry, store: any Store, clock: any BerthClock = SystemClock(), logger: Logger) {
        let metrics = BerthMetrics()
        self.tenants = tenants
        self.store = metrics.measuring(store)
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        self.keys = APIKeyResolver(store: self.store, clock: clock)
        self.recordedTokens = RecordedTokenUsers()
        self.catchUps = CatchUpThrottle()
    }

    public var verifyPurchase: VerifyPurchase {
        VerifyPurchase(
            store: store,
            prover: PurchaseProver(logger: logger, clock: clock),
            kinds: kinds,
            clock: clock,
            logger: logger,
            recordedTokens: recordedTokens
        )
    }
    public var catchUpAfterValidation: CatchUpAfterValidation {
        CatchUpAfterValidation(restore: restorePurchases, throttle: catchUps, clock: clock)
    }
    public var owedToCustomers: OwedToCustomers { OwedToCustomers(store: store, clock: clock) }
    public var operatorRecords: OperatorRecords { OperatorRecords(store: store) }
    public var operatorViews: OperatorViewQueries { OperatorViewQueries(store: store, clock: clock, logger: logger) }
    public var bookingLookup: BookingLookup { BookingLookup(store: store) }
    public var bookingQueries: BookingQueries { BookingQueries(store: store) }
    public var manageClosures: ManageClosures { ManageClosures(store: store, clock: clock) }
    public var createAPIKey: CreateAPIKey { CreateAPIKey(store: store) }
    public var revokeAPIKey: RevokeAPIKey { RevokeAPIKey(store: store) }
    public var rotateAPIKey: RotateAPIKey { RotateAPIKey(store: store) }
    public var serviceHealth: ServiceHealth { ServiceHealth(store: store, expectedMigrations: expectedMigrations) }
    public var manageInventory: ManageInventory { ManageInventory(store: store, tenants: tenants, clock: clock, logger: logger) }
    public var resolveUnappliedPayment: ResolveUnappliedPayment { ResolveUnappliedPayment(store: store, claims: verifyPurchase.claims, clock: clock) }
    public var validateForPlugin: ValidateForPlugin {
        ValidateForPlugin(verifyPurchase: verifyPurchase, claimReceipt: claimReceipt, userEntitlements: userEntitlements) {
            [catchUp = catchUpAfterValidation] result, runtime, userId, proves in
            await catchUp(after: result, runtime: runtime, userId: userId, callerProvesUser: proves)
        }
    }
    public var claimReceipt: ClaimReceipt {
        ClaimReceipt(store: store, prover: PurchaseProver(logger: logger, clock: clock), claims: verifyPurchase.claims, logger: logger)
    }
    public var userEntitlements: UserEntitlements { UserEntitlements(store: store, clock: clock) }
    public var createBooking: CreateBooking { CreateBooking(store: store, clock: clock) }
    public var adminTransition: AdminBookingTransition { AdminBookingTransition(store: store, clock: clock) }
    public var receiveNotification: ReceiveNotification {
        ReceiveNotification(store: store, kinds: kinds, clock: clock, logger: logger, claims: verifyPurchase.claims)
    }
    public var verifyReceipt: VerifyReceipt { VerifyReceipt(store: store, clock: clock, logger: logger) }
    public var subscriptionQueries: SubscriptionQueries { SubscriptionQueries(store: store, clock: clock, logger: logger) }
    public var authorizeLink: AuthorizeLink { AuthorizeLink(logger: logger) }
    public var linkSubscription: LinkSubscription { LinkSubscription(store: store, clock: clock, logger: logger) }
    public var unlinkSubscription: UnlinkSubscription { UnlinkSubscription(store: store, clock: clock, logger: logger) }
    public var recordMembership: RecordMembership { RecordMembership(store: store, clock: clock, logger: logger) }
    public var applyReceipt: ApplyReceipt { ApplyReceipt(store: store, clock: clock, logger: logger) }
    public var refreshSubscription: RefreshSubscription { RefreshSubscription(store: store, clock: clock, logger: logger) }
    public var creditQueries: CreditQueries { CreditQueries(store: store, clock: clock) }
    public var reserveCredits: ReserveCredits { ReserveCredits(store: store, clock: clock) }
    public var commitReservation: CommitReservation { CommitReservation(store: store, clock: clock) }
    public var releaseReservation: ReleaseReservation { ReleaseReservation(store: store, clock: clock) }
    public var creditReports: CreditReports { CreditReports(store: store, clock: clock) }
    public var createCreditProduct: CreateCreditProduct { CreateCreditProduct(store: store, clock: clock) }
    public var updateCreditProduct: UpdateCreditProduct { UpdateCreditProduct(store: store, clock: clock) }
    public var adjustCredits: AdjustCredits { AdjustCredits(store: store, clock: clock) }
    public var startCardPayment: StartCardPayment { StartCardPayment(store: store, clock: clock, logger: logger) }
    public var signAppleOffers: SignAppleOffers { SignAppleOffers(store: store, clock: clock) }
    public var appleHistory: AppleNotificationHistory {
        AppleNotificationHistory(store: store, tenants: tenants, receive: receiveNotification, clock: clock, logger: logger)
    }
    public var extendRenewalDates: ExtendRenewalDates { ExtendRenewalDates(store: store, clock: clock, logger: logger) }
    public var restorePurchases: RestorePurchases { RestorePurchases(store: store, claims: verifyPurchase.claims, logger: logger) }
    public var consumptionConsents: ConsumptionConsents { ConsumptionConsents(store: store, clock: clock) }
    /// The consumption answers still owed to Apple (the history worker's every tick).
    public var consumptionAnswers: ConsumptionAnswers {
        ConsumptionAnswers(store: store, clock: clock, logger: logger, owner: consumptionAnswersOwner)
    }
    public let consumptionAnswersOwner = "consumption-" + UUID().uuidString
    public var receiveStripeEvent: ReceiveStripeEvent { ReceiveStripeEvent(store: store, clock: clock, logger: logger) }
    /// The card rail's background work (refunds, overdue and lapsed payments).
    public var cardPaymentJobs: CardPaymentJobs { CardPaymentJobs(store: store, tenants: tenants, clock: clock, logger: logger) }
    public var receivePlayNotification: ReceivePlayNotification {
        ReceivePlayNotification(store: store, kinds: kinds, clock: clock, logger: logger, claims: verifyPurchase.claims)
    }
    /// Google Play's background work (acknowledgements, the voided-purchases sweep).
    public var playJobs: PlayJobs {
        PlayJobs(store: store, tenants: tenants, receive: receivePlayNotification, clock: clock, logger: logger, owner: playJobsOwner)
    }
    /// This instance's name as the owner of Play acknowledgement leases.
    public let playJobsOwner = "play-" + UUID().uuidString
    public var cardDeposits: CardDeposits { CardDeposits(store: store, clock: clock, logger: logger) }
    public var refundCardBooking: RefundCardBooking { RefundCardBooking(store: store, jobs: cardPaymentJobs, clock: clock) }
    public var moveBooking: MoveBooking { MoveBooking(store: store, clock: clock, refund: refundCardBooking) }
    public var cancelBooking: CancelBooking { CancelBooking(store: store, clock: clock, refund: refundCardBooking, transition: adminTransition) }
}
