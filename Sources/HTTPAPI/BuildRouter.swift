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
    AnswerSigningRoutes(tenants: services.tenants).register(on: open)
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

    OperationsRoutes(health: services.serviceHealth, metrics: services.metrics, metricsToken: services.metricsToken).register(on: open)
    WebRoutes(assets: WebAssets.shared).register(on: open)
    CatalogRoutes(tenants: services.tenants, creditQueries: services.creditQueries).register(
        public: open,
        callers: group(CatalogContext.self, scope: nil, limit: .reads)
    )
    CreditRoutes(
        creditQueries: services.creditQueries,
        verifyPurchase: services.verifyPurchase,
        reserveCredits: services.reserveCredits,
        commitReservation: services.commitReservation,
        releaseReservation: services.releaseReservation,
        clock: services.clock
    )
    .register(reads: reads, spending: group(AccountContext.self, scope: .credits, limit: .account, signed: true))
    AdminCreditRoutes(
        records: services.operatorRecords,
        creditReports: services.creditReports,
        createCreditProduct: services.createCreditProduct,
        updateCreditProduct: services.updateCreditProduct,
        adjustCredits: services.adjustCredits
    ).register(on: admin)
    V1CreditRoutes(creditQueries: services.creditQueries, verifyPurchase: services.verifyPurchase, tenants: services.tenants)
        .register(
            .init(
                reads: group(UserContext.self, scope: .read, limit: .reads, shape: V1CreditRoutes.shape, signed: true),
                purchases: group(UserContext.self, scope: .purchases, limit: .verification, shape: V1CreditRoutes.shape, signed: true),
                open: PublicRoutes(group.router, table: group.table, shape: V1CreditRoutes.shape)
            )
        )
    BookingRoutes(
        createBooking: services.createBooking,
        metrics: services.metrics,
        queries: services.bookingQueries,
        bookingLookup: services.bookingLookup,
        limiter: group.limiter
    )
    .register(creating: bookingChanges, reading: reads)
    VerifyPurchaseRoutes(
        verifyPurchase: services.verifyPurchase,
        clock: services.clock,
        metrics: services.metrics,
        catchUp: services.catchUpAfterValidation
    )
    .register(on: group(UserContext.self, scope: .purchases, limit: .verification, signed: true))
    VerifyReceiptRoutes(verifyReceipt: services.verifyReceipt)
        .register(on: group(ProofContext.self, scope: .purchases, limit: .verification, shape: VerifyReceiptRoutes.shape))
    AppleNotificationRoutes(intake: group.notificationIntake, tenants: services.tenants, metrics: services.metrics).register(on: open)
    GooglePlayRoutes(
        receive: services.receivePlayNotification,
        tenants: services.tenants,
        rateLimiter: group.limiter,
        trustedProxies: services.trustedProxies,
        metrics: services.metrics
    ).register(on: open)
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
    AdminRoutes(
        records: services.operatorRecords,
        bookingLookup: services.bookingLookup,
        resolveUnappliedPayment: services.resolveUnappliedPayment,
        logger: services.logger,
        clock: services.clock,
        adminTransition: services.adminTransition
    ).register(on: admin)
    OperatorRoutes(views: services.operatorViews, clock: services.clock).register(on: admin)
    OwedRoutes(owed: services.owedToCustomers, bookingLookup: services.bookingLookup).register(on: admin)
    InventoryRoutes(inventory: services.manageInventory).register(on: admin)
    ClosureRoutes(
        closures: services.manageClosures,
        refund: services.refundCardBooking,
        cancel: services.adminTransition,
        move: services.moveBooking,
        bookingLookup: services.bookingLookup
    ).register(on: admin)
    SeasonRoutes(
        move: services.moveBooking,
        cancel: services.cancelBooking,
        inventory: services.manageInventory,
        bookingLookup: services.bookingLookup,
        limiter: group.limiter
    ).register(changing: bookingChanges, reading: reads, admin: admin)
    ManifestRoutes(views: services.operatorViews).register(on: admin)
    CardPaymentRoutes(
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
    ).register(.init(users: group(UserContext.self, scope: .purchases, limit: .verification, signed: true), open: open, admin: admin))
    RestoreRoutes(restorePurchases: services.restorePurchases).register(
        on: group(UserContext.self, scope: .purchases, limit: .verification, signed: true)
    )
    // Offers and consent speak for a person (T3, T5): the user's own token or the app's backend, not the public client key.
    let accountWrites = group(AccountContext.self, scope: .purchases, limit: .account, signed: true)
    OfferRoutes(signAppleOffers: services.signAppleOffers).register(on: accountWrites)
    ConsentRoutes(consumptionConsents: services.consumptionConsents).register(reads: reads, writes: accountWrites)
    AdminKeyRoutes(
        records: services.operatorRecords,
        createKey: services.createAPIKey,
        revokeKey: services.revokeAPIKey,
        rotateKey: services.rotateAPIKey,
        clock: services.clock
    ).register(on: admin)
    SubscriptionRoutes(
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
    ).register(
        .init(
            reads: reads,
            link: group(
                UserContext.self,
                scope: .purchases,
                limit: .account,
                note: "client keys and user tokens with the store's proof; server keys holding subscriptions by id"
            ),
            // T10: a key narrowed to other scopes does not reach it
            view: group(SubscriptionViewContext.self, scope: .read, limit: .account, signed: true),
            backend: group(BackendContext.self, scope: .memberships, limit: .account),
            admin: admin
        )
    )
}

/// Existing clients' route forms: FT Chinese's and the cordova plugin's validator.
private func registerCompatibleRoutes(_ services: any RouteServices, group: RouteGroups, authenticator: Authenticator) {
    FTCRoutes(
        tenants: services.tenants,
        applyReceipt: services.applyReceipt,
        subscriptionQueries: services.subscriptionQueries,
        refreshSubscription: services.refreshSubscription,
        authorizeLink: services.authorizeLink,
        linkSubscription: services.linkSubscription,
        unlinkSubscription: services.unlinkSubscription,
        notificationIntake: group.notificationIntake
    ).register(
        .init(
            app: group(
                AppKeyContext.self,
                scope: .purchases,
                limit: .verification,
                shape: FTCRoutes.shape,
                note: "link and unlink: client keys with receiptData as proof"
            ),
            backend: group(BackendContext.self, scope: .subscriptions, limit: .verification, shape: FTCRoutes.shape),
            apple: PublicRoutes(group.router, table: group.table, shape: FTCRoutes.shape)
        )
    )
    CordovaValidatorRoutes(validateForPlugin: services.validateForPlugin, metrics: services.metrics, clock: services.clock).register(
        on: group(
            ProofContext.self,
            scope: .purchases,
            limit: .verification,
            shape: CordovaValidatorRoutes.shape,
            authenticate: ValidatorQueryKey(authenticator: authenticator),
            signed: true
        )
    )
}
