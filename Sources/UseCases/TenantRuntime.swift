import AppStoreAPI
import AppleSignedData
import AsyncHTTPClient
import Domain
import Foundation
import JWTKit
import Logging
import Synchronization
import X509

/// A tenant from the catalog with what serving it needs: its verifier, its expectations of Apple
/// data and the keys that verify its users' tokens. Built once at start.
public struct TenantRuntime: Sendable {
    /// The catalog's tenant; its resources are the live inventory (``with(resources:)``).
    public private(set) var tenant: Tenant
    /// The App Store as this tenant is configured for it: its verifiers, expectations and clients
    /// (every tenant sells on the App Store: its bundle id is required).
    public let appStore: AppStoreRuntime
    /// Where and with which secret webhooks are sent; nil when the tenant has none (no events are queued).
    public let webhook: (configuration: Tenant.Webhook, secret: Secret)?
    /// Nil when the token key is not configured (for example the secret variable is unset):
    /// user tokens are then refused while API keys keep working.
    public let userKeys: JWTKeyCollection?
    /// RS256 user tokens verified with keys from a JWKS URL (Firebase); nil for other tenants.
    public let jwks: JWKSKeys?
    /// The card rail (Stripe), when the tenant configured it and its secrets are set.
    public let stripe: StripeRuntime?
    /// Google Play, when the tenant configured it and its service account is set.
    public let play: PlayRuntime?
    /// Signs the tenant's answers, when `answerSigning` is configured.
    public let answerSigner: AnswerSigner?
    /// The runtimes of stores registered beyond the App Store and Google Play (their clients and
    /// secrets), by store: each built by its own ``PurchaseSource/runtime(for:context:)``.
    public let storeRuntimes: [StoreName: any Sendable]

    /// The runtime `store` built for this tenant, as that store's own type (nil: the tenant does not
    /// sell through it).
    public func runtime<T>(of store: StoreName, as type: T.Type) -> T? { storeRuntimes[store] as? T }

    public var id: String { tenant.id }

    /// The same runtime (verifiers, keys, clients) with another inventory: resources change while
    /// Berth runs (issue "Run the season"); nothing else of a tenant does.
    public func with(resources: [Resource]) -> TenantRuntime {
        var copy = self
        copy.tenant.resources = resources
        return copy
    }

    /// Who may pay with what beyond the product: account tokens, Sandbox testers (built once).
    public let purchasePolicy: PurchasePolicy

    /// - Parameters:
    ///   - baseDirectory: where relative files named by the catalog live (the catalog's folder).
    ///   - environment: the process environment (secrets come from it).
    ///   - clock: the present for payloads that do not say when they were signed, and the key set's age
    ///     (the monotonic clock unless a test injects its own).
    ///   - httpClient: what calls Apple, Google, Stripe and key sets (the composition root's
    ///     outbound client; nothing here makes one of its own).
    ///   - sources: the stores whose runtimes are built here besides the App Store's and Google Play's.
    public init(
        tenant: Tenant,
        baseDirectory: URL,
        environment: [String: String],
        clock: any BerthClock = SystemClock(),
        httpClient: HTTPClient,
        sources: PurchaseSources = .standard,
        logger: Logger
    ) async throws {
        // A folder, however it was given: relative to a file URL without the trailing slash, a
        // catalog's "root.pem" would be looked for beside the folder, not in it.
        let baseDirectory = URL(fileURLWithPath: baseDirectory.path, isDirectory: true)
        self.tenant = tenant
        purchasePolicy = PurchasePolicy(
            accountTokenIsUserId: tenant.appAccountTokenMatchesUserId == true,
            userIdIsToken: tenant.userIdsAreUUIDs,
            acceptsProduction: tenant.apple.allowsProduction,
            sandboxTesters: Set(tenant.apple.sandboxTesters ?? []),
            derivedAccountTokens: AccountTokens.derived,
            checkedAccountTokens: AccountTokens.checkedOnly
        )
        appStore = try AppStoreRuntime(
            tenant: tenant,
            baseDirectory: baseDirectory,
            environment: environment,
            clock: clock,
            httpClient: httpClient,
            logger: logger
        )
        if let url = tenant.auth.jwksURL {
            jwks = JWKSKeys(url: url, now: Self.instants(of: clock), client: httpClient, logger: logger)
            userKeys = nil
        } else {
            jwks = nil
            userKeys = try await Self.userKeys(for: tenant, baseDirectory: baseDirectory, environment: environment, logger: logger)
        }
        stripe = StripeRuntime.load(tenant, environment: environment, httpClient: httpClient, logger: logger)
        play = PlayRuntime.load(tenant, environment: environment, httpClient: httpClient, logger: logger)
        answerSigner = try tenant.answerSigning.map { try AnswerSigner.load($0, tenant: tenant.id, environment: environment) }
        if let signing = tenant.answerSigning, signing.testPrivateKeyPEM != nil {
            logger.info(
                "tenant \(tenant.id): answers are signed with the test key written in the catalog (key id \(signing.keyId)): anyone can sign as it; a real app's key comes from privateKeyEnv or privateKeyFileEnv"
            )
        }
        if let configuration = tenant.webhook {
            // Fail fast: starting without the secret would queue events nobody can sign.
            guard let secret = environment[configuration.secretEnv], secret.utf8.count >= 16 else {
                throw ConfigurationError("tenant \(tenant.id) sends webhooks: set \(configuration.secretEnv) to a secret of at least 16 bytes")
            }
            webhook = (configuration, Secret(secret))
        } else {
            webhook = nil
        }
        let context = StoreRuntimeContext(
            baseDirectory: baseDirectory,
            environment: environment,
            clock: clock,
            httpClient: httpClient,
            logger: logger
        )
        var runtimes: [StoreName: any Sendable] = [:]
        for source in sources.all {
            if let runtime = try await source.runtime(for: tenant, context: context) { runtimes[source.store] = runtime }
        }
        storeRuntimes = runtimes
    }

    /// Instants of the monotonic clock for the wall clock; for a test's clock, instants that move as it
    /// is moved (a key set ages when the test advances its clock, not while a busy machine is slow).
    static func instants(of clock: any BerthClock) -> @Sendable () -> ContinuousClock.Instant {
        if clock is SystemClock { return { ContinuousClock.now } }
        let origin = ContinuousClock.now, originDate = clock.now()
        return { origin + .milliseconds(Int64((clock.now().timeIntervalSince(originDate) * 1000).rounded())) }
    }

    private static func userKeys(
        for tenant: Tenant,
        baseDirectory: URL,
        environment: [String: String],
        logger: Logger
    ) async throws -> JWTKeyCollection? {
        let keys = JWTKeyCollection()
        let auth = tenant.auth
        switch auth.algorithm {
        case "HS256":
            // At least the hash's 32 bytes (RFC 7518 §3.2); jwt-kit asserts it, and will require it.
            guard let name = auth.secretEnv, let secret = environment[name], secret.utf8.count >= 32 else {
                logger.warning(
                    "tenant \(tenant.id): \(auth.secretEnv ?? "secret variable") is unset or shorter than 32 bytes; user tokens are refused, API keys still work"
                )
                return nil
            }
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        case "ES256", "RS256":
            guard let file = auth.publicKeyFile else { return nil }
            let url = URL(fileURLWithPath: file, relativeTo: baseDirectory)
            guard let pem = try? String(contentsOf: url, encoding: .utf8) else {
                logger.warning("tenant \(tenant.id): public key \(url.path) not readable; user tokens are refused")
                return nil
            }
            if auth.algorithm == "ES256" {
                await keys.add(ecdsa: try ES256PublicKey(pem: pem))
            } else {
                await keys.add(rsa: try Insecure.RSA.PublicKey(pem: pem), digestAlgorithm: .sha256)
            }
        default:
            return nil
        }
        return keys
    }
}

/// All tenants, found by id or by the issuer of their users' tokens. Every copy shares one state:
/// an inventory change (``replaceResources(tenantId:resources:version:)``) is seen by every holder
/// from the next request on; a request keeps the runtime it was given.
public struct TenantRegistry: Sendable {
    struct State {
        var tenants: [String: TenantRuntime]
        var ordered: [TenantRuntime]
        var byIssuer: [String: TenantRuntime]
        /// The inventory version each tenant's resources were read at (0: the catalog's).
        var versions: [String: Int64] = [:]
    }
    final class Shared: Sendable {
        let state: Mutex<State>
        init(_ state: State) { self.state = Mutex(state) }
    }
    private let shared: Shared

    public var tenants: [String: TenantRuntime] { shared.state.withLock { $0.tenants } }
    /// The tenants in the catalog's order.
    public var ordered: [TenantRuntime] { shared.state.withLock { $0.ordered } }

    public init(_ runtimes: [TenantRuntime]) {
        shared = Shared(
            State(
                tenants: Dictionary(uniqueKeysWithValues: runtimes.map { ($0.id, $0) }),
                ordered: runtimes,
                byIssuer: Dictionary(uniqueKeysWithValues: runtimes.map { ($0.tenant.auth.issuer, $0) })
            )
        )
    }

    /// The inventory version `tenantId`'s resources were last read at.
    public func inventoryVersion(_ tenantId: String) -> Int64 { shared.state.withLock { $0.versions[tenantId] ?? 0 } }

    /// Puts `resources` in effect for `tenantId` when `version` is newer than what it has (two
    /// readers racing never put an older inventory back). Returns whether it changed anything.
    @discardableResult
    public func replaceResources(tenantId: String, resources: [Resource], version: Int64) -> Bool {
        shared.state.withLock { state in
            guard let current = state.tenants[tenantId], version > state.versions[tenantId] ?? 0 else { return false }
            let updated = current.with(resources: resources)
            state.tenants[tenantId] = updated
            if let index = state.ordered.firstIndex(where: { $0.id == tenantId }) { state.ordered[index] = updated }
            state.byIssuer[updated.tenant.auth.issuer] = updated
            state.versions[tenantId] = version
            return true
        }
    }

    /// Builds the runtime of every catalog tenant.
    ///
    /// What a tenant leaves off for want of a setting (a secret not in the environment, a test CA not
    /// made yet) is said in one line at start, each at debug level: the shipped catalog's sample apps
    /// start quietly, and an operator still sees that something is off.
    public static func load(
        _ catalog: Catalog,
        baseDirectory: URL,
        environment: [String: String],
        clock: any BerthClock = SystemClock(),
        httpClient: HTTPClient,
        logger: Logger
    ) async throws -> TenantRegistry {
        let notes = StartupNotes()
        let gathering = Logger(label: logger.label, factory: { _ in GatheringLogHandler(inner: logger.handler, notes: notes) })
        var runtimes: [TenantRuntime] = []
        defer { notes.stop() }
        for tenant in catalog.tenants {
            runtimes.append(
                try await TenantRuntime(
                    tenant: tenant,
                    baseDirectory: baseDirectory,
                    environment: environment,
                    clock: clock,
                    httpClient: httpClient,
                    logger: gathering
                )
            )
        }
        notes.stop()
        let gathered = notes.gathered
        if !gathered.isEmpty {
            let byTenant = Dictionary(grouping: gathered, by: \.tenant).map { "\($0.key) (\($0.value.count))" }.sorted().joined(separator: ", ")
            logger.warning(
                "\(gathered.count) part(s) of the catalog's apps are off for want of a setting: \(byTenant); BERTH_LOG_LEVEL=debug names each (expected with the shipped products.json: its apps' Apple keys, Stripe and Google secrets are a real deployment's)"
            )
        }
        return TenantRegistry(runtimes)
    }

    public func tenant(id: String) -> TenantRuntime? { shared.state.withLock { $0.tenants[id] } }
    public func tenant(issuer: String) -> TenantRuntime? { shared.state.withLock { $0.byIssuer[issuer] } }
}

/// A setting Berth cannot start without, and what to do about it.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
