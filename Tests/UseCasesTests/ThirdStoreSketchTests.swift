import AsyncHTTPClient
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Testing
import UseCases

// A third store, sketched the way docs/architecture.md ("Adding a store") says to add one, and kept
// here (not shipped) to show that the seam holds: an Amazon Appstore-like store with its own proof
// (a receipt id and the store's user id), its own per-tenant settings and secret, its own errors
// and its own receipt verification service. Nothing below edits an existing file: a shipped store
// would add its line to `PurchaseSources.standard`, its fields to `VerifyPurchaseRequest`, its error
// codes to the contract and its client library to Package.swift.

/// The sketch's store.
extension StoreName {
    static let sketchStore = StoreName(rawValue: "amazon_appstore")
}

/// Its error codes (a shipped store lists them in `errorCodes`, and the contract lists them).
extension ErrorCode {
    static let sketchNotConfigured = ErrorCode(rawValue: "amazon_not_configured")
    static let sketchReceiptInvalid = ErrorCode(rawValue: "amazon_receipt_invalid")
}

/// Its settings, read from the tenant's `stores.amazon_appstore`.
struct SketchStoreSettings: Decodable {
    var sharedSecretEnv: String
}

/// What its receipt verification service answers for a receipt.
struct SketchReceipt: Sendable {
    var receiptId: String
    var userId: String
    var productId: String
    var purchasedAt: Date
    var cancelled: Bool
}

/// The store's receipt verification service, played here by a table (the real one is a network
/// service, asked with the tenant's shared secret).
struct SketchVerificationService: Sendable {
    var receipts: [String: SketchReceipt]
    var secret: String

    func verify(receiptId: String, userId: String, secret: String) -> SketchReceipt? {
        guard secret == self.secret, let receipt = receipts[receiptId], receipt.userId == userId else { return nil }
        return receipt
    }
}

/// The tenant's runtime of the store: its secret, from the process environment.
struct SketchStoreRuntime: Sendable {
    var secret: String
}

/// Its proof form.
struct SketchProof: Sendable {
    var receiptId: String
    var storeUserId: String
}

struct SketchStoreSource: PurchaseSource {
    let service: SketchVerificationService

    var store: StoreName { .sketchStore }
    var proofFieldsHint: String { "amazonReceiptId with amazonUserId (Amazon Appstore)" }
    var primaryField: String { "amazonReceiptId" }
    var errorCodes: [ErrorCode] { [.sketchNotConfigured, .sketchReceiptInvalid] }

    func proof(from fields: ProofFields) -> PurchaseProof? {
        guard let receiptId = fields["amazonReceiptId"] else { return nil }
        return PurchaseProof(
            source: self,
            field: "amazonReceiptId",
            form: SketchProof(receiptId: receiptId, storeUserId: fields["amazonUserId"] ?? "")
        )
    }

    func runtime(for tenant: Tenant, context: StoreRuntimeContext) async throws -> (any Sendable)? {
        guard let settings = try tenant.stores?[store.rawValue]?.decode(SketchStoreSettings.self) else { return nil }
        guard let secret = context.environment[settings.sharedSecretEnv], !secret.isEmpty else {
            context.logger.warning("tenant \(tenant.id): \(settings.sharedSecretEnv) is unset; Amazon purchases are refused")
            return nil
        }
        return SketchStoreRuntime(secret: secret)
    }

    func checkOffered(by runtime: TenantRuntime) throws {
        guard runtime.runtime(of: store, as: SketchStoreRuntime.self) != nil else {
            throw DomainError(.unprocessable, .sketchNotConfigured, "this app takes no Amazon purchases", field: primaryField)
        }
    }

    func prove(
        _ proof: PurchaseProof,
        productId: String?,
        userId: String,
        runtime: TenantRuntime,
        prover: PurchaseProver
    ) async throws -> ProvenTransaction {
        try checkOffered(by: runtime)
        guard let form = proof.form as? SketchProof, let own = runtime.runtime(of: store, as: SketchStoreRuntime.self),
            let receipt = service.verify(receiptId: form.receiptId, userId: form.storeUserId, secret: own.secret)
        else {
            throw DomainError(.unprocessable, .sketchReceiptInvalid, "Amazon does not know this receipt", field: proof.field)
        }
        return ProvenTransaction(
            transactionId: receipt.receiptId,
            originalTransactionId: receipt.receiptId,
            productId: receipt.productId,
            environment: .sandbox,
            purchasedAt: receipt.purchasedAt,
            revoked: receipt.cancelled,
            appAccountToken: nil,
            proofHash: "amazon:" + receipt.receiptId,
            kind: .lookup,
            store: store
        )
    }
}

@Suite("A third store added the documented way: its folder, its registry line, its request fields")
struct ThirdStoreSketchTests {
    static let service = SketchVerificationService(
        receipts: [
            "R-1": SketchReceipt(receiptId: "R-1", userId: "amzn-ana", productId: "pack10", purchasedAt: PurchaseFixture.now, cancelled: false)
        ],
        secret: "s3cret"
    )
    static let sources = PurchaseSources([GooglePlaySource(), SketchStoreSource(service: service), AppStoreSource()], fallback: AppStoreSource())

    static func runtime(secret: String?) async throws -> TenantRuntime {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR",
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"]},
             "stores": {"amazon_appstore": {"sharedSecretEnv": "AMAZON_SECRET"}},
             "products": [{"id": "pack10", "kind": "credits", "type": "Consumable", "title": "Ten", "credits": 10, "priceMinor": 99}],
             "resources": []}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return try await TenantRuntime(
            tenant: tenant,
            baseDirectory: FileManager.default.temporaryDirectory,
            environment: secret.map { ["AMAZON_SECRET": $0] } ?? [:],
            clock: ManualClock(PurchaseFixture.now),
            httpClient: .shared,
            sources: sources,
            logger: Logger(label: "third-store-sketch")
        )
    }

    /// The refusal `body` throws (nil: none, or not a ``DomainError``).
    static func refusal(_ body: () async throws -> Void) async -> DomainError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? DomainError
        }
    }

    static func verify(_ store: any Store) -> VerifyPurchase {
        let clock = ManualClock(PurchaseFixture.now)
        let logger = Logger(label: "third-store-sketch")
        return VerifyPurchase(
            store: store,
            prover: PurchaseProver(logger: logger, clock: clock, sources: sources),
            kinds: .all,
            clock: clock,
            logger: logger
        )
    }

    @Test(
        "its proof is read from its own fields, proven by its service with its tenant's secret, and claimed once",
        arguments: StoreBackend.available
    )
    func claimed(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime(secret: "s3cret")
        try await backend.run { store in
            try await PurchaseFixture.sellPack10(store)
            let verify = Self.verify(store)
            let fields = ProofFields(["amazonReceiptId": "R-1", "amazonUserId": "amzn-ana"])
            #expect(try Self.sources.proof(from: fields).store == .sketchStore)
            func send(_ user: String) async throws -> VerifyPurchase.Result {
                try await verify(
                    .init(runtime: runtime, userId: user, productId: "pack10", proofFields: fields, target: nil, callerProvesUser: true)
                )
            }
            let first = try await send("ana")
            #expect(PurchaseFixture.outcome(first.outcome) == "applied")
            #expect(first.proofField == "amazonReceiptId", "a refusal would name the third store's field")
            #expect(first.outcome.purchase?.store == .sketchStore, "the purchase is stored as the third store's, not Apple's")
            #expect(PurchaseFixture.outcome(try await send("ana").outcome) == "repeated")
            #expect(PurchaseFixture.outcome(try await send("bo").outcome) == "replay", "the unique transaction index holds across stores")
            let balance = try await store.read { tx in
                try tx.credits.account(tenantId: "a", userId: "ana", creditType: "c", now: PurchaseFixture.now, forUpdate: false)
            }
            #expect(balance.summary.balance == 10)
        }
    }

    @Test("its refusals name its own fields and codes: an unknown receipt, a tenant without its secret, a request without any proof")
    func refusals() async throws {
        let runtime = try await Self.runtime(secret: "s3cret")
        let prover = PurchaseProver(logger: Logger(label: "third-store-sketch"), sources: Self.sources)
        let unknown = try Self.sources.proof(from: ProofFields(["amazonReceiptId": "R-9", "amazonUserId": "amzn-ana"]))
        let refused = await Self.refusal { _ = try await prover.prove(unknown, productId: "pack10", userId: "ana", runtime: runtime) }
        #expect(refused?.code == .sketchReceiptInvalid)
        #expect(refused?.field == "amazonReceiptId")
        let unconfigured = try await Self.runtime(secret: nil)
        let off = await Self.refusal { try unknown.source.checkOffered(by: unconfigured) }
        #expect(off?.code == .sketchNotConfigured)
        let none = await Self.refusal { _ = try Self.sources.proof(from: ProofFields(["amazonUserId": "amzn-ana"])) }
        #expect(none?.code == .missingField)
        #expect(none?.message.contains("amazonReceiptId with amazonUserId") == true, "\(none?.message ?? "")")
    }

    @Test("the answers that used to be two-way Apple/Google ternaries name the third store as itself")
    func namedAsItself() {
        #expect(GrantSource.subscription(of: .sketchStore).rawValue == "amazon_appstore_subscription")
        #expect(GrantSource.subscription(of: .appStore) == .appStoreSubscription)
        #expect(GrantSource.subscription(of: .googlePlay).rawValue == "google_play_subscription")
        #expect(StoreName.sketchStore.payMethod == "amazon_appstore")
        #expect(StoreName.appStore.payMethod == "apple")
        #expect(StoreName.googlePlay.payMethod == "google")
        #expect(Self.sources.source(of: ProvenTransaction.sketch).store == .sketchStore)
    }
}

extension ProvenTransaction {
    fileprivate static var sketch: ProvenTransaction {
        ProvenTransaction(
            transactionId: "R-1",
            originalTransactionId: "R-1",
            productId: "pack10",
            environment: .sandbox,
            purchasedAt: nil,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h",
            store: .sketchStore
        )
    }
}
