import Domain
import Foundation
import Logging
import UseCases

/// What the HTTP layer is built from: the tenants, the store's ports, the clock and the use cases
/// over them (each route gets the use case it calls).
public struct BerthServices: Sendable {
    public var tenants: TenantRegistry
    public var store: any Store
    public var clock: any BerthClock
    public var logger: Logger
    let rateLimiter: RateLimiter
    /// Users whose account tokens this process has recorded (see ``RecordedTokenUsers``).
    let recordedTokens: RecordedTokenUsers
    /// When a validation may read a user's App Store history (once per user per 10 minutes).
    let catchUps: CatchUpThrottle
    /// This instance's metrics (`GET /metrics`).
    public let metrics: BerthMetrics
    /// When set, `GET /metrics` asks for `Authorization: Bearer <token>`.
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
        self.store = MeasuredStore(store: store, metrics: metrics)
        self.clock = clock
        self.logger = logger
        self.rateLimiter = RateLimiter(clock: clock)
        self.metrics = metrics
        self.keys = APIKeyResolver(store: self.store, clock: clock)
        self.recordedTokens = RecordedTokenUsers()
        self.catchUps = CatchUpThrottle()
    }

    var verifyPurchase: VerifyPurchase {
        VerifyPurchase(
            store: store,
            prover: PurchaseProver(logger: logger, clock: clock),
            kinds: kinds,
            clock: clock,
            logger: logger,
            recordedTokens: recordedTokens
        )
    }
    /// After a validation applied an App Store transaction to a user: what the customer's history
    /// holds that Berth lacks is applied too (with the App Store Server API; throttled per user).
    /// Only for a caller who proved the user, or a proof bought with the user's token: a transaction
    /// someone else's JWS put on a named user does not open that customer's whole history (T7).
    func catchUp(after result: VerifyPurchase.Result, runtime: TenantRuntime, userId: String, callerProvesUser: Bool) async {
        guard callerProvesUser || result.proofNamesUser, let purchase = result.outcome.purchase, purchase.store == .appStore else { return }
        _ = await restorePurchases.catchUp(
            runtime: runtime,
            userId: userId,
            transactionId: purchase.transactionId,
            throttle: catchUps,
            now: clock.now()
        )
    }
    var owedToCustomers: OwedToCustomers { OwedToCustomers(store: store, clock: clock) }
    var operatorRecords: OperatorRecords { OperatorRecords(store: store) }
    var operatorViews: OperatorViewQueries { OperatorViewQueries(store: store, clock: clock, logger: logger) }
    var bookingLookup: BookingLookup { BookingLookup(store: store) }
    var bookingQueries: BookingQueries { BookingQueries(store: store) }
    var manageClosures: ManageClosures { ManageClosures(store: store, clock: clock) }
    var createAPIKey: CreateAPIKey { CreateAPIKey(store: store) }
    var revokeAPIKey: RevokeAPIKey { RevokeAPIKey(store: store) }
    var rotateAPIKey: RotateAPIKey { RotateAPIKey(store: store) }
    var serviceHealth: ServiceHealth { ServiceHealth(store: store, expectedMigrations: expectedMigrations) }
    public var manageInventory: ManageInventory { ManageInventory(store: store, tenants: tenants, clock: clock, logger: logger) }
    var resolveUnappliedPayment: ResolveUnappliedPayment { ResolveUnappliedPayment(store: store, claims: verifyPurchase.claims, clock: clock) }
    var validateForPlugin: ValidateForPlugin {
        ValidateForPlugin(verifyPurchase: verifyPurchase, claimReceipt: claimReceipt, userEntitlements: userEntitlements) {
            [self] result, runtime, userId, proves in
            await catchUp(after: result, runtime: runtime, userId: userId, callerProvesUser: proves)
        }
    }
    var claimReceipt: ClaimReceipt {
        ClaimReceipt(store: store, prover: PurchaseProver(logger: logger, clock: clock), claims: verifyPurchase.claims, logger: logger)
    }
    var userEntitlements: UserEntitlements { UserEntitlements(store: store, clock: clock) }
    var createBooking: CreateBooking { CreateBooking(store: store, clock: clock) }
    var adminTransition: AdminBookingTransition { AdminBookingTransition(store: store, clock: clock) }
    var receiveNotification: ReceiveNotification {
        ReceiveNotification(store: store, kinds: kinds, clock: clock, logger: logger, claims: verifyPurchase.claims)
    }
    var notificationIntake: NotificationIntake {
        NotificationIntake(receive: receiveNotification, rateLimiter: rateLimiter, trustedProxies: trustedProxies)
    }
    var verifyReceipt: VerifyReceipt { VerifyReceipt(store: store, clock: clock, logger: logger) }
    var subscriptionQueries: SubscriptionQueries { SubscriptionQueries(store: store, clock: clock, logger: logger) }
    var authorizeLink: AuthorizeLink { AuthorizeLink(logger: logger) }
    var linkSubscription: LinkSubscription { LinkSubscription(store: store, clock: clock, logger: logger) }
    var unlinkSubscription: UnlinkSubscription { UnlinkSubscription(store: store, clock: clock, logger: logger) }
    var recordMembership: RecordMembership { RecordMembership(store: store, clock: clock, logger: logger) }
    var applyReceipt: ApplyReceipt { ApplyReceipt(store: store, clock: clock, logger: logger) }
    var refreshSubscription: RefreshSubscription { RefreshSubscription(store: store, clock: clock, logger: logger) }
    var creditQueries: CreditQueries { CreditQueries(store: store, clock: clock) }
    var reserveCredits: ReserveCredits { ReserveCredits(store: store, clock: clock) }
    var commitReservation: CommitReservation { CommitReservation(store: store, clock: clock) }
    var releaseReservation: ReleaseReservation { ReleaseReservation(store: store, clock: clock) }
    var creditReports: CreditReports { CreditReports(store: store, clock: clock) }
    var createCreditProduct: CreateCreditProduct { CreateCreditProduct(store: store, clock: clock) }
    var updateCreditProduct: UpdateCreditProduct { UpdateCreditProduct(store: store, clock: clock) }
    var adjustCredits: AdjustCredits { AdjustCredits(store: store, clock: clock) }
    var startCardPayment: StartCardPayment { StartCardPayment(store: store, clock: clock, logger: logger) }
    var signAppleOffers: SignAppleOffers { SignAppleOffers(store: store, clock: clock) }
    public var appleHistory: AppleNotificationHistory {
        AppleNotificationHistory(store: store, tenants: tenants, receive: receiveNotification, clock: clock, logger: logger)
    }
    var extendRenewalDates: ExtendRenewalDates { ExtendRenewalDates(store: store, clock: clock, logger: logger) }
    var restorePurchases: RestorePurchases { RestorePurchases(store: store, claims: verifyPurchase.claims, logger: logger) }
    var consumptionConsents: ConsumptionConsents { ConsumptionConsents(store: store, clock: clock) }
    /// The consumption answers still owed to Apple (the history worker's every tick).
    public var consumptionAnswers: ConsumptionAnswers {
        ConsumptionAnswers(store: store, clock: clock, logger: logger, owner: consumptionAnswersOwner)
    }
    let consumptionAnswersOwner = "consumption-" + UUID().uuidString
    var receiveStripeEvent: ReceiveStripeEvent { ReceiveStripeEvent(store: store, clock: clock, logger: logger) }
    /// The card rail's background work (refunds, overdue and lapsed payments).
    public var cardPaymentJobs: CardPaymentJobs { CardPaymentJobs(store: store, tenants: tenants, clock: clock, logger: logger) }
    var receivePlayNotification: ReceivePlayNotification {
        ReceivePlayNotification(store: store, kinds: kinds, clock: clock, logger: logger, claims: verifyPurchase.claims)
    }
    /// Google Play's background work (acknowledgements, the voided-purchases sweep).
    public var playJobs: PlayJobs {
        PlayJobs(store: store, tenants: tenants, receive: receivePlayNotification, clock: clock, logger: logger, owner: playJobsOwner)
    }
    /// This instance's name as the owner of Play acknowledgement leases.
    let playJobsOwner = "play-" + UUID().uuidString
    var cardDeposits: CardDeposits { CardDeposits(store: store, clock: clock, logger: logger) }
    var refundCardBooking: RefundCardBooking { RefundCardBooking(store: store, jobs: cardPaymentJobs, clock: clock) }
    var moveBooking: MoveBooking { MoveBooking(store: store, clock: clock, refund: refundCardBooking) }
    var cancelBooking: CancelBooking { CancelBooking(store: store, clock: clock, refund: refundCardBooking, transition: adminTransition) }
}
