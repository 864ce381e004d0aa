import AsyncHTTPClient
import Domain
import Foundation
import HTTPAPI
import Logging
import OutboundHTTP
import SQLStore
import ServiceLifecycle
import Synchronization
import UseCases

extension BerthSetup {
    /// `berth serve`'s whole start, in one place: the outbound client (a service of the
    /// application), the store this setup names, the services over both, the workers and the
    /// application. SQLite is migrated before anything is built; PostgreSQL's connection pool is a
    /// service of the application, migrated once it runs and before the server listens. `run` runs
    /// the application (`berth serve` until a signal). The store is closed and the client shut down
    /// afterwards, also when a step failed.
    public func withApplication(server: ServerConfiguration, logger: Logger, _ run: (any Service) async throws -> Void) async throws {
        let outbound = OutboundClientService(client: OutboundClient.make())
        do {
            try await withStore(server: server, outbound: outbound, logger: logger, run)
        } catch {
            await outbound.shutdown()
            throw error
        }
        await outbound.shutdown()
    }

    private func withStore(
        server: ServerConfiguration,
        outbound: OutboundClientService,
        logger: Logger,
        _ run: (any Service) async throws -> Void
    ) async throws {
        if let postgres {
            let catalog = try loadCatalog()
            let store = try PostgresStore(settings: postgres, logger: logger)
            do {
                let services = try await services(catalog: catalog, store: store, httpClient: outbound.client, readInventory: false, logger: logger)
                logServing(catalog, server: server, logger: logger)
                try await run(
                    buildApplication(
                        services: services,
                        server: server,
                        storeService: store,
                        outbound: outbound,
                        beforeServerStarts: {
                            try await prepare(store, catalog: catalog, logger: logger, now: Date())
                            try await services.manageInventory.refresh()
                        }
                    )
                )
            } catch {
                try? store.close()
                throw error
            }
            try store.close()
            return
        }
        let (catalog, store) = try await prepareStore(logger: logger, now: Date())
        do {
            let services = try await services(catalog: catalog, store: store, httpClient: outbound.client, logger: logger)
            logServing(catalog, server: server, logger: logger)
            try await run(buildApplication(services: services, server: server, outbound: outbound))
        } catch {
            try? store.close()
            throw error
        }
        try store.close()
    }

    private func logServing(_ catalog: Catalog, server: ServerConfiguration, logger: Logger) {
        logger.info(
            "serving \(catalog.tenants.count) tenant(s) from \(catalogURL.path) on \(server.host):\(server.port), database \(databaseDescription)"
        )
    }
}

/// The outbound client (Apple, Google, Stripe, key sets) as a service of the application: listed
/// before the workers that call through it, it shuts down after them.
final class OutboundClientService: Service, Sendable, CustomStringConvertible {
    let client: HTTPClient
    private let shutDown = Mutex(false)
    var description: String { "OutboundClient" }

    init(client: HTTPClient) { self.client = client }

    func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Shuts the client down once: when the application stops, or when a start failed before it ran.
    func shutdown() async {
        let first = shutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try? await client.shutdown()
    }
}
