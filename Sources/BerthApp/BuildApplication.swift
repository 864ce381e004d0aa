import BerthWorkers
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import Logging
import ServiceLifecycle
import UseCases

/// The application: the router, the server configuration, the webhook HTTP client and the delivery
/// service (shut down in reverse order: the deliverer stops before its client). `storeService` is
/// the store's own service when it has one (PostgreSQL's connection pool): it starts first and
/// stops last; `outbound`, the outbound client's, next (the workers calling through it stop
/// before it); `beforeServerStarts` runs once they run, before the server listens (migrations).
public func buildApplication(
    services: BerthServices,
    server: ServerConfiguration,
    storeService: (any Service)? = nil,
    outbound: (any Service)? = nil,
    beforeServerStarts: (@Sendable () async throws -> Void)? = nil
) -> some ApplicationProtocol {
    let client = WebhookHTTPClient()
    let governor = ConnectionGovernor(limits: server.connections, metrics: services.metrics)
    var application = Application(
        router: BerthResponders(router: buildRouter(services: services)),
        // Connections are capped overall and per address, and a request's head has its own deadline
        // (ConnectionGovernor); a request's body and answer idle for 60 s close the connection.
        server: .http1(configuration: .init(additionalChannelHandlers: [governor.handler()], idleTimeout: .seconds(60))),
        configuration: .init(address: .hostname(server.host, port: server.port), serverName: "Berth"),
        services: [storeService, outbound].compactMap { $0 } + [client, webhookDeliverer(services: services, client: client)]
            + cardPaymentWorker(services: services) + playWorker(services: services) + appleHistoryWorker(services: services)
            + inventoryWorker(services: services),
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

/// The card rail's background jobs, when a tenant has a card rail and the services run them.
func cardPaymentWorker(services: BerthServices) -> [any Service] {
    guard services.cardPaymentJobs.hasWork, let interval = services.cardPaymentJobsInterval else { return [] }
    return [PeriodicWorker("card-payments", jobs: BackgroundJobs.cardPayments(services.cardPaymentJobs), clock: services.clock, tick: interval)]
}

/// Reads what another instance changed in the inventory (a resource added, changed, retired), every
/// `inventoryRefreshInterval`: one small read of the tenants' versions, the resources only of a tenant
/// whose version moved on.
func inventoryWorker(services: BerthServices) -> [any Service] {
    guard let interval = services.inventoryRefreshInterval else { return [] }
    let inventory = services.manageInventory
    let logger = services.logger
    let job = PeriodicJob("inventory") { _ in
        do {
            let changed = try await inventory.refresh()
            if !changed.isEmpty { logger.info("inventory read again", metadata: ["tenants": .string(changed.joined(separator: ","))]) }
        } catch {
            logger.warning("inventory not read: \(String(describing: type(of: error)))")
        }
    }
    return [PeriodicWorker("inventory", jobs: [job], clock: services.clock, tick: interval)]
}

/// Google Play's background jobs, when a tenant sells on Play and the services run them.
func playWorker(services: BerthServices) -> [any Service] {
    guard services.playJobs.hasWork, let interval = services.playJobsInterval else { return [] }
    return [
        PeriodicWorker("google-play", jobs: BackgroundJobs.play(services.playJobs, metrics: services.metrics), clock: services.clock, tick: interval)
    ]
}

/// Get Notification History and consumption answers, when a tenant has an App Store Server API key
/// and the services run them.
func appleHistoryWorker(services: BerthServices) -> [any Service] {
    let jobs = BackgroundJobs.apple(history: services.appleHistory, consumption: services.consumptionAnswers, metrics: services.metrics)
    guard !jobs.isEmpty, let tick = services.appleHistoryTick else { return [] }
    return [PeriodicWorker("apple", jobs: jobs, clock: services.clock, tick: tick)]
}

/// The delivery service of the webhook outbox, as `buildApplication` runs it.
public func webhookDeliverer(services: BerthServices, client: WebhookHTTPClient) -> WebhookDeliverer {
    WebhookDeliverer(
        store: services.store,
        tenants: services.tenants,
        client: client,
        clock: services.clock,
        logger: services.logger,
        metrics: services.metrics,
        perTenant: services.webhookParallel
    )
}

/// The workers count what they do in the service's metrics.
extension BerthMetrics: WorkerMetrics {}
