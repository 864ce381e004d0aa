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

    public init(host: String = "127.0.0.1", port: Int = 8080, portFile: String? = nil) {
        self.host = host
        self.port = port
        self.portFile = portFile
    }
}

/// Assembles the whole HTTP application. `berth serve` and the tests both call this.
public func buildRouter(services: BerthServices) -> Router<BerthRequestContext> {
    let router = Router(context: BerthRequestContext.self)
    let routes = RouteTable()
    router.middlewares.add(RequestIdentifier())
    router.middlewares.add(AccessLog())
    router.middlewares.add(MetricsMiddleware(metrics: services.metrics))
    router.middlewares.add(ErrorMiddleware())
    router.middlewares.add(MethodGuard(routes: routes))
    router.middlewares.add(Authenticator(tenants: services.tenants, store: services.store, keyCache: APIKeyCache()))
    OperationsRoutes(store: services.store, metrics: services.metrics, metricsToken: services.metricsToken,
                     expectedMigrations: services.expectedMigrations).register(on: router)
    WebRoutes(assets: WebAssets.shared).register(on: router)
    CatalogRoutes(tenants: services.tenants, store: services.store).register(on: router)
    CreditRoutes(accounts: services.creditAccounts, clock: services.clock).register(on: router)
    AdminCreditRoutes(operations: services.creditOperations, store: services.store, rateLimiter: services.rateLimiter).register(on: router)
    BookingRoutes(services: services).register(on: router)
    VerifyPurchaseRoutes(verifyPurchase: services.verifyPurchase, rateLimiter: services.rateLimiter, clock: services.clock,
                         metrics: services.metrics).register(on: router)
    VerifyReceiptRoutes(services: services).register(on: router)
    AppleNotificationRoutes(receiveNotification: services.receiveNotification, tenants: services.tenants, rateLimiter: services.rateLimiter,
                            metrics: services.metrics).register(on: router)
    AdminRoutes(services: services).register(on: router)
    SubscriptionRoutes(services: services).register(on: router)
    FTCRoutes(services: services).register(on: router)
    CordovaValidatorRoutes(services: services).register(on: router)
    routes.load(router.routes.map { (path: $0.path.description, method: $0.method.rawValue) })
    return router
}

/// The application: the router, the server configuration, the webhook HTTP client and the delivery
/// service (shut down in reverse order: the deliverer stops before its client). `storeService` is
/// the store's own service when it has one (PostgreSQL's connection pool): it starts first and
/// stops last; `beforeServerStarts` runs once it runs, before the server listens (migrations).
public func buildApplication(services: BerthServices, server: ServerConfiguration, storeService: (any Service)? = nil,
                             beforeServerStarts: (@Sendable () async throws -> Void)? = nil) -> some ApplicationProtocol {
    let client = WebhookHTTPClient()
    var application = Application(
        router: buildRouter(services: services),
        // Idle connections are closed after 60 s (slow clients cannot hold connections forever).
        server: .http1(configuration: .init(idleTimeout: .seconds(60))),
        configuration: .init(address: .hostname(server.host, port: server.port), serverName: "Berth"),
        services: (storeService.map { [$0] } ?? []) + [client, webhookDeliverer(services: services, client: client)],
        onServerRunning: { [portFile = server.portFile, logger = services.logger] channel in
            guard let portFile, let port = channel.localAddress?.port else { return }
            do {
                try Data(String(port).utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
            } catch {
                logger.error("could not write the port file \(portFile): \(error)")
            }
        },
        logger: services.logger
    )
    if let beforeServerStarts { application.beforeServerStarts(perform: beforeServerStarts) }
    return application
}

/// The delivery service of the webhook outbox, as `buildApplication` runs it.
public func webhookDeliverer(services: BerthServices, client: WebhookHTTPClient) -> WebhookDeliverer {
    WebhookDeliverer(store: services.store, tenants: services.tenants, client: client, clock: services.clock, logger: services.logger,
                     metrics: services.metrics)
}
