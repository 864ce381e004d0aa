import Domain
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UseCases

/// Where the server listens.
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 lets the operating system choose a free port (see `portFile`).
    public var port: Int
    /// Where to write the port actually bound, once the server listens (for supervisors and tests).
    public var portFile: String?
    /// Connections held at once (overall, per client address) and the deadline of a request's head.
    public var connections: ConnectionLimits

    public init(host: String = "127.0.0.1", port: Int = 8080, portFile: String? = nil, connections: ConnectionLimits = ConnectionLimits()) {
        self.host = host
        self.port = port
        self.portFile = portFile
        self.connections = connections
    }
}

/// What the HTTP layer is given: the tenants, the clock, this instance's metrics and settings, and
/// the use cases the routes call, built elsewhere (BerthApp's `BerthServices`, the composition
/// root). HTTPAPI maps HTTP to these; it builds none of them and never holds the store.
public protocol RouteServices: Sendable {
    var tenants: TenantRegistry { get }
    var clock: any BerthClock { get }
    var logger: Logger { get }
    /// This instance's metrics (`GET /metrics`, the request and verification counters).
    var metrics: BerthMetrics { get }
    /// When set, `GET /metrics` asks for `Authorization: Bearer <token>`.
    var metricsToken: Secret? { get }
    /// The reverse proxies whose `X-Forwarded-For` names the client (`BERTH_TRUSTED_PROXIES`).
    var trustedProxies: TrustedProxies { get }
    /// API keys presented to this instance.
    var keys: APIKeyResolver { get }
    /// Who may call each route, filled as the router is built (the access test reads it).
    var routeAccess: RouteAccessTable { get }

    // Purchases and the stores
    var verifyPurchase: VerifyPurchase { get }
    var catchUpAfterValidation: CatchUpAfterValidation { get }
    var validateForPlugin: ValidateForPlugin { get }
    var verifyReceipt: VerifyReceipt { get }
    var restorePurchases: RestorePurchases { get }
    var receiveNotification: ReceiveNotification { get }
    var receivePlayNotification: ReceivePlayNotification { get }
    var signAppleOffers: SignAppleOffers { get }
    var consumptionConsents: ConsumptionConsents { get }
    var resolveUnappliedPayment: ResolveUnappliedPayment { get }

    // Credits
    var creditQueries: CreditQueries { get }
    var reserveCredits: ReserveCredits { get }
    var commitReservation: CommitReservation { get }
    var releaseReservation: ReleaseReservation { get }
    var creditReports: CreditReports { get }
    var createCreditProduct: CreateCreditProduct { get }
    var updateCreditProduct: UpdateCreditProduct { get }
    var adjustCredits: AdjustCredits { get }

    // Bookings, the season and the card rail
    var createBooking: CreateBooking { get }
    var bookingQueries: BookingQueries { get }
    var bookingLookup: BookingLookup { get }
    var adminTransition: AdminBookingTransition { get }
    var moveBooking: MoveBooking { get }
    var cancelBooking: CancelBooking { get }
    var manageInventory: ManageInventory { get }
    var manageClosures: ManageClosures { get }
    var startCardPayment: StartCardPayment { get }
    var receiveStripeEvent: ReceiveStripeEvent { get }
    var cardDeposits: CardDeposits { get }
    var refundCardBooking: RefundCardBooking { get }

    // Subscriptions
    var userEntitlements: UserEntitlements { get }
    var subscriptionQueries: SubscriptionQueries { get }
    var refreshSubscription: RefreshSubscription { get }
    var authorizeLink: AuthorizeLink { get }
    var linkSubscription: LinkSubscription { get }
    var unlinkSubscription: UnlinkSubscription { get }
    var recordMembership: RecordMembership { get }
    var extendRenewalDates: ExtendRenewalDates { get }
    var applyReceipt: ApplyReceipt { get }

    // Operators and the service itself
    var operatorRecords: OperatorRecords { get }
    var operatorViews: OperatorViewQueries { get }
    var owedToCustomers: OwedToCustomers { get }
    var createAPIKey: CreateAPIKey { get }
    var revokeAPIKey: RevokeAPIKey { get }
    var rotateAPIKey: RotateAPIKey { get }
    var serviceHealth: ServiceHealth { get }
}

/// Assembles the whole HTTP application. `berth serve` and the tests both call this.
///
/// Routes are registered in groups by who may call them: each group's request context admits its
/// kinds of caller (``GuardedContext``), needs its key scope, draws from its rate limit and renders
/// refusals in its clients' shape. ``RouteServices/routeAccess`` records every route's group.
/// Each router has its own rate limits.
public func buildRouter(services: any RouteServices) -> Router<BerthRequestContext> {
    let router = Router(context: BerthRequestContext.self)
    let routes = RouteTable()
    let table = services.routeAccess
    let limiter = RateLimiter(clock: services.clock)
    let authenticator = Authenticator(tenants: services.tenants, keys: services.keys)
    // Id, language, metrics and access log, outside the error middlewares: refusals carry the id,
    // are rendered in the caller's language and count with the status the client saw.
    router.middlewares.add(RequestScope(metrics: services.metrics))
    // CORS per tenant, outside the error middleware: a WebView's app reads refusals too.
    router.middlewares.add(CrossOrigin(tenants: services.tenants, routes: routes))
    // FT Chinese's route forms under a prefix nobody serves: its 404 shape, as the OpenAPI document gives those routes.
    // The caller from the credentials, inside the error handling; 405 for a known path's other
    // methods (before the FT Chinese 404 forms), else errors as answers.
    router.middlewares.add(
        ErrorMiddleware(authenticator: authenticator, routes: routes, unmatched: [(FTCRoutes.hasRouteForm, FTCRoutes.shape)])
    )

    let group = RouteGroups(
        router: router,
        table: table,
        limiter: limiter,
        notificationIntake: NotificationIntake(
            receive: services.receiveNotification,
            rateLimiter: limiter,
            trustedProxies: services.trustedProxies
        ),
        // Without a signing tenant the middleware is left out altogether (nothing to pay per request).
        signingClock: services.tenants.ordered.contains { $0.answerSigner != nil } ? services.clock : nil
    )
    let open = PublicRoutes(router, table: table)
    let admin = group(AdminRequestContext.self, scope: .admin, limit: .admin)
    let reads = group(UserContext.self, scope: .read, limit: .reads, signed: true)
    let bookingChanges = group(BookingContext.self, scope: .bookings, limit: .booking, signed: true)
    registerAppRoutes(services, group: group, open: open, admin: admin, reads: reads, bookingChanges: bookingChanges)
    registerOperatorRoutes(services, group: group, open: open, admin: admin, reads: reads, bookingChanges: bookingChanges)
    registerCompatibleRoutes(services, group: group, authenticator: authenticator)
    open.addRoutes(AnswerSigningRoutes(tenants: services.tenants).routes)
    routes.load(router.routes.map { (path: $0.path.description, method: $0.method.rawValue) })
    return router
}

/// Makes the guarded groups of one router: each with its context, key scope, rate limit, refusal
/// shape and, where `signed`, answer signing (only when some tenant signs).
struct RouteGroups {
    let router: Router<BerthRequestContext>
    let table: RouteAccessTable
    let limiter: RateLimiter
    /// Store notifications from Apple (its own route and FT Chinese's), rate limited with this router's limits.
    let notificationIntake: NotificationIntake
    let signingClock: (any BerthClock)?

    /// `signed`: the group's answers are signed for tenants with `answerSigning` (what an app
    /// decides access from: a user's state, purchase and validator answers).
    func callAsFunction<C: GuardedContext>(
        _ context: C.Type,
        scope: KeyScope?,
        limit: RateLimiter.Scope?,
        shape: ErrorShape? = nil,
        authenticate: (any MiddlewareProtocol<Request, Response, BerthRequestContext>)? = nil,
        note: String? = nil,
        signed: Bool = false
    ) -> GuardedRoutes<C> {
        GuardedRoutes(
            router,
            context,
            table: table,
            shape: shape,
            scope: scope,
            limit: limit,
            rateLimiter: limiter,
            authenticate: authenticate,
            note: note,
            signedBy: signed ? signingClock : nil
        )
    }
}

/// What apps and their backends call: health and the web page, catalog, credits (and their
/// administration), bookings, purchases, store notifications.
private func registerAppRoutes(
    _ services: any RouteServices,
    group: RouteGroups,
    open: PublicRoutes,
    admin: GuardedRoutes<AdminRequestContext>,
    reads: GuardedRoutes<UserContext>,
    bookingChanges: GuardedRoutes<BookingContext>
) {
    open.addRoutes(OperationsRoutes(health: services.serviceHealth, metrics: services.metrics, metricsToken: services.metricsToken).routes)
    open.addRoutes(WebRoutes(assets: WebAssets.shared).routes)
    let catalog = CatalogRoutes(tenants: services.tenants, creditQueries: services.creditQueries).routes
    open.addRoutes(catalog.open)
    group(CatalogContext.self, scope: nil, limit: .reads).addRoutes(catalog.callers)
    let credits = CreditRoutes(
        creditQueries: services.creditQueries,
        verifyPurchase: services.verifyPurchase,
        reserveCredits: services.reserveCredits,
        commitReservation: services.commitReservation,
        releaseReservation: services.releaseReservation,
        clock: services.clock
    ).routes
    reads.addRoutes(credits.reads)
    group(AccountContext.self, scope: .credits, limit: .account, signed: true).addRoutes(credits.spending)
    let adminCredits = AdminCreditRoutes(
        records: services.operatorRecords,
        creditReports: services.creditReports,
        createCreditProduct: services.createCreditProduct,
        updateCreditProduct: services.updateCreditProduct,
        adjustCredits: services.adjustCredits
    )
    admin.addRoutes(adminCredits.routes)
    let v1 = V1CreditRoutes(creditQueries: services.creditQueries, verifyPurchase: services.verifyPurchase, tenants: services.tenants).routes
    group(UserContext.self, scope: .read, limit: .reads, shape: V1CreditRoutes.shape, signed: true).addRoutes(v1.reads)
    group(UserContext.self, scope: .purchases, limit: .verification, shape: V1CreditRoutes.shape, signed: true).addRoutes(v1.purchases)
    PublicRoutes(group.router, table: group.table, shape: V1CreditRoutes.shape).addRoutes(v1.open)
    let bookings = BookingRoutes(
        createBooking: services.createBooking,
        metrics: services.metrics,
        queries: services.bookingQueries,
        bookingLookup: services.bookingLookup,
        limiter: group.limiter
    ).routes
    bookingChanges.addRoutes(bookings.creating)
    reads.addRoutes(bookings.reading)
    let verify = VerifyPurchaseRoutes(
        verifyPurchase: services.verifyPurchase,
        clock: services.clock,
        metrics: services.metrics,
        catchUp: services.catchUpAfterValidation
    )
    group(UserContext.self, scope: .purchases, limit: .verification, signed: true).addRoutes(verify.routes)
    group(ProofContext.self, scope: .purchases, limit: .verification, shape: VerifyReceiptRoutes.shape)
        .addRoutes(VerifyReceiptRoutes(verifyReceipt: services.verifyReceipt).routes)
    open.addRoutes(AppleNotificationRoutes(intake: group.notificationIntake, tenants: services.tenants, metrics: services.metrics).routes)
    let play = GooglePlayRoutes(
        receive: services.receivePlayNotification,
        tenants: services.tenants,
        rateLimiter: group.limiter,
        trustedProxies: services.trustedProxies,
        metrics: services.metrics
    )
    open.addRoutes(play.routes)
}

/// What operators call (admin keys), and the users' own season changes.
private func registerOperatorRoutes(
    _ services: any RouteServices,
    group: RouteGroups,
    open: PublicRoutes,
    admin: GuardedRoutes<AdminRequestContext>,
    reads: GuardedRoutes<UserContext>,
    bookingChanges: GuardedRoutes<BookingContext>
) {
    let operations = AdminRoutes(
        records: services.operatorRecords,
        bookingLookup: services.bookingLookup,
        resolveUnappliedPayment: services.resolveUnappliedPayment,
        logger: services.logger,
        clock: services.clock,
        adminTransition: services.adminTransition
    )
    admin.addRoutes(operations.routes)
    admin.addRoutes(OperatorRoutes(views: services.operatorViews, clock: services.clock).routes)
    admin.addRoutes(OwedRoutes(owed: services.owedToCustomers, bookingLookup: services.bookingLookup).routes)
    admin.addRoutes(InventoryRoutes(inventory: services.manageInventory).routes)
    let closures = ClosureRoutes(
        closures: services.manageClosures,
        refund: services.refundCardBooking,
        cancel: services.adminTransition,
        move: services.moveBooking,
        bookingLookup: services.bookingLookup
    )
    admin.addRoutes(closures.routes)
    let season = SeasonRoutes(
        move: services.moveBooking,
        cancel: services.cancelBooking,
        inventory: services.manageInventory,
        bookingLookup: services.bookingLookup,
        limiter: group.limiter
    ).routes
    bookingChanges.addRoutes(season.changing)
    reads.addRoutes(season.reading)
    admin.addRoutes(season.admin)
    admin.addRoutes(ManifestRoutes(views: services.operatorViews).routes)
    let card = CardPaymentRoutes(
        bookingQueries: services.bookingQueries,
        bookingLookup: services.bookingLookup,
        cardDeposits: services.cardDeposits,
        startCardPayment: services.startCardPayment,
        tenants: services.tenants,
        trustedProxies: services.trustedProxies,
        rateLimiter: group.limiter,
        receiveStripeEvent: services.receiveStripeEvent,
        metrics: services.metrics,
        refundCardBooking: services.refundCardBooking
    ).routes
    // A user's purchases by card and restores: one group (its scope, limit and signing).
    let purchases = group(UserContext.self, scope: .purchases, limit: .verification, signed: true)
    purchases.addRoutes(card.users)
    open.addRoutes(card.open)
    admin.addRoutes(card.admin)
    purchases.addRoutes(RestoreRoutes(restorePurchases: services.restorePurchases).routes)
    // Offers and consent speak for a person (T3, T5): the user's own token or the app's backend, not the public client key.
    let accountWrites = group(AccountContext.self, scope: .purchases, limit: .account, signed: true)
    accountWrites.addRoutes(OfferRoutes(signAppleOffers: services.signAppleOffers).routes)
    let consent = ConsentRoutes(consumptionConsents: services.consumptionConsents).routes
    reads.addRoutes(consent.reads)
    accountWrites.addRoutes(consent.writes)
    let keys = AdminKeyRoutes(
        records: services.operatorRecords,
        createKey: services.createAPIKey,
        revokeKey: services.revokeAPIKey,
        rotateKey: services.rotateAPIKey,
        clock: services.clock
    )
    admin.addRoutes(keys.routes)
    let subscriptions = SubscriptionRoutes(
        records: services.operatorRecords,
        userEntitlements: services.userEntitlements,
        clock: services.clock,
        subscriptionQueries: services.subscriptionQueries,
        refreshSubscription: services.refreshSubscription,
        authorizeLink: services.authorizeLink,
        linkSubscription: services.linkSubscription,
        logger: services.logger,
        unlinkSubscription: services.unlinkSubscription,
        recordMembership: services.recordMembership,
        extendRenewalDates: services.extendRenewalDates,
        verifyPurchase: services.verifyPurchase
    ).routes
    reads.addRoutes(subscriptions.reads)
    group(
        UserContext.self,
        scope: .purchases,
        limit: .account,
        note: "client keys and user tokens with the store's proof; server keys holding subscriptions by id"
    ).addRoutes(subscriptions.link)
    // T10: a key narrowed to other scopes does not reach it
    group(SubscriptionViewContext.self, scope: .read, limit: .account, signed: true).addRoutes(subscriptions.view)
    group(BackendContext.self, scope: .memberships, limit: .account).addRoutes(subscriptions.backend)
    admin.addRoutes(subscriptions.admin)
}

/// Existing clients' route forms: FT Chinese's and the cordova plugin's validator.
private func registerCompatibleRoutes(_ services: any RouteServices, group: RouteGroups, authenticator: Authenticator) {
    let ftc = FTCRoutes(
        tenants: services.tenants,
        applyReceipt: services.applyReceipt,
        subscriptionQueries: services.subscriptionQueries,
        refreshSubscription: services.refreshSubscription,
        authorizeLink: services.authorizeLink,
        linkSubscription: services.linkSubscription,
        unlinkSubscription: services.unlinkSubscription,
        notificationIntake: group.notificationIntake
    ).routes
    group(
        AppKeyContext.self,
        scope: .purchases,
        limit: .verification,
        shape: FTCRoutes.shape,
        note: "link and unlink: client keys with receiptData as proof"
    ).addRoutes(ftc.app)
    group(BackendContext.self, scope: .subscriptions, limit: .verification, shape: FTCRoutes.shape).addRoutes(ftc.backend)
    PublicRoutes(group.router, table: group.table, shape: FTCRoutes.shape).addRoutes(ftc.apple)
    let validator = CordovaValidatorRoutes(validateForPlugin: services.validateForPlugin, metrics: services.metrics, clock: services.clock)
    group(
        ProofContext.self,
        scope: .purchases,
        limit: .verification,
        shape: CordovaValidatorRoutes.shape,
        authenticate: ValidatorQueryKey(authenticator: authenticator),
        signed: true
    ).addRoutes(validator.routes)
}
