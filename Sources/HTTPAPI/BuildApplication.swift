import Hummingbird
import Logging
import UseCases

/// Where the server listens.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }
}

/// Assembles the whole HTTP application. `berth serve` and the tests both call this.
public func buildRouter(services: BerthServices) -> Router<BerthRequestContext> {
    let router = Router(context: BerthRequestContext.self)
    router.middlewares.add(ErrorMiddleware())
    router.middlewares.add(Authenticator(tenants: services.tenants, store: services.store, keyCache: APIKeyCache()))
    CatalogRoutes().register(on: router)
    BookingRoutes(services: services).register(on: router)
    VerifyPurchaseRoutes(verifyPurchase: services.verifyPurchase, rateLimiter: services.rateLimiter).register(on: router)
    VerifyReceiptRoutes(services: services).register(on: router)
    AppleNotificationRoutes(receiveNotification: services.receiveNotification, tenants: services.tenants, rateLimiter: services.rateLimiter).register(on: router)
    AdminRoutes(services: services).register(on: router)
    return router
}

/// The application: the router, the server configuration, the webhook HTTP client and the delivery
/// service (shut down in reverse order: the deliverer stops before its client).
public func buildApplication(services: BerthServices, server: ServerConfiguration) -> some ApplicationProtocol {
    let client = WebhookHTTPClient()
    return Application(
        router: buildRouter(services: services),
        // Idle connections are closed after 60 s (slow clients cannot hold connections forever).
        server: .http1(configuration: .init(idleTimeout: .seconds(60))),
        configuration: .init(address: .hostname(server.host, port: server.port), serverName: "Berth"),
        services: [client, webhookDeliverer(services: services, client: client)],
        logger: services.logger
    )
}

/// The delivery service of the webhook outbox, as `buildApplication` runs it.
public func webhookDeliverer(services: BerthServices, client: WebhookHTTPClient) -> WebhookDeliverer {
    WebhookDeliverer(store: services.store, tenants: services.tenants, client: client, clock: services.clock, logger: services.logger)
}
