import Hummingbird
import Logging

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
    router.middlewares.add(Authenticator(tenants: services.tenants, keys: services.keys, keyCache: APIKeyCache()))
    CatalogRoutes().register(on: router)
    BookingRoutes(services: services).register(on: router)
    VerifyPurchaseRoutes(services: services).register(on: router)
    VerifyReceiptRoutes(services: services).register(on: router)
    AppleNotificationRoutes(services: services).register(on: router)
    AdminRoutes(services: services).register(on: router)
    return router
}

/// The application: the router, the server configuration and the webhook delivery service.
public func buildApplication(services: BerthServices, server: ServerConfiguration) -> some ApplicationProtocol {
    Application(
        router: buildRouter(services: services),
        configuration: .init(address: .hostname(server.host, port: server.port), serverName: "Berth"),
        services: [webhookDeliverer(services: services)],
        logger: services.logger
    )
}

/// The delivery service of the webhook outbox, as `buildApplication` runs it.
public func webhookDeliverer(services: BerthServices) -> WebhookDeliverer {
    WebhookDeliverer(store: services.webhooks, tenants: services.tenants, clock: services.clock, logger: services.logger)
}
