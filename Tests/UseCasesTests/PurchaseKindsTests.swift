import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing
import UseCases

/// The product kinds' transactional bodies, called as `VerifyPurchase` calls them
/// (`VerifyPurchase.claim`), on every backend: locks, unique indexes and the claim policy hold
/// under concurrent claims, not only under SQLite's single writer.
@Suite("Purchase kinds' units of work on every backend")
struct PurchaseKindsTests {
    static let now = StoreBackend.now

    func withStore(_ backend: StoreBackend, _ body: (any Store) async throws -> Void) async throws {
        try await backend.run(body)
    }

    static let lifetime = "pro.lifetime", pass = "club.pass30"

    static var unlockTenant: Tenant {
        get throws {
            let json = """
                {"id": "a", "name": "A", "currency": "EUR",
                 "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
                 "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
                 "products": [
                   {"id": "pro.lifetime", "kind": "unlock", "type": "Non-Consumable", "title": "Pro", "entitlement": "premium"},
                   {"id": "club.pass30", "kind": "unlock", "type": "Non-Renewing Subscription", "title": "Club", "entitlement": "club", "durationDays": 30}
                 ],
                 "resources": []}
                """
            let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
            try Catalog(tenants: [tenant]).validate()
            return tenant
        }
    }

    static func unlockClaim(
        _ tenant: Tenant,
        user: String,
        product: String,
        transaction: String,
        at: Date
    ) -> (PurchaseClaim, ProvenTransaction, PurchaseRequest) {
        let proven = ProvenTransaction(
            transactionId: transaction,
            originalTransactionId: transaction,
            productId: product,
            environment: .sandbox,
            purchasedAt: at,
            revoked: false,
            appAccountToken: nil,
            proofHash: "hash-\(transaction)"
        )
        let claim = PurchaseClaim(proven, tenantId: tenant.id, userId: user, target: .unlock(productId: product), now: at)
        let request = PurchaseRequest(
            tenant: tenant,
            policy: PurchasePolicy(),
            emitsEvents: false,
            userId: user,
            productId: product,
            transactionId: transaction,
            named: nil
        )
        return (claim, proven, request)
    }

    @Test(
        "unlocks: 10 users racing for one lifetime transaction: one grant, nine replays; a restore by the owner answers the same grant",
        arguments: StoreBackend.available
    )
    func unlockRace(backend: StoreBackend) async throws {
        let tenant = try Self.unlockTenant
        try await withStore(backend) { store in
            let outcomes = await withTaskGroup(of: String.self) { group in
                for n in 0..<10 {
                    group.addTask {
                        let (claim, proven, request) = Self.unlockClaim(
                            tenant,
                            user: "user\(n)",
                            product: Self.lifetime,
                            transaction: "t1",
                            at: Self.now
                        )
                        let result = try? await store.write { tx in
                            try Claims.claim(claim, proven: proven, request: request, kind: UnlockKind(), tx: tx, now: Self.now)
                        }
                        switch result?.outcome {
                        case .applied?: return "applied"
                        case .replay?: return "replay"
                        default: return "other"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "applied" }.count == 1)
            #expect(outcomes.filter { $0 == "replay" }.count == 9)
            let owner = try #require(try await store.read { try $0.grants.grant(tenantId: "a", source: .unlock, reference: "t1") })
            #expect(owner.until == nil && owner.state == .active && owner.entitlement == "premium")
            let (claim, proven, request) = Self.unlockClaim(tenant, user: owner.userId, product: Self.lifetime, transaction: "t1", at: Self.now)
            let restore = try await store.write { tx in
                try Claims.claim(claim, proven: proven, request: request, kind: UnlockKind(), tx: tx, now: Self.now)
            }
            guard case .repeated = restore.outcome, case .unlock(let held, let grant) = restore.state else {
                Issue.record("a restore is a repeat that answers the grant: \(restore.outcome)")
                return
            }
            #expect(grant?.id == owner.id && held.active)
        }
    }

    @Test("passes: 8 concurrent purchases by one user are laid end to end, without overlap or gap", arguments: StoreBackend.available)
    func passChain(backend: StoreBackend) async throws {
        let tenant = try Self.unlockTenant
        try await withStore(backend) { store in
            await withTaskGroup(of: Void.self) { group in
                for n in 0..<8 {
                    group.addTask {
                        let (claim, proven, request) = Self.unlockClaim(
                            tenant,
                            user: "u",
                            product: Self.pass,
                            transaction: "p\(n)",
                            at: Self.now.addingTimeInterval(Double(n))
                        )
                        _ = try? await store.write { tx in
                            try Claims.claim(claim, proven: proven, request: request, kind: UnlockKind(), tx: tx, now: Self.now)
                        }
                    }
                }
            }
            let grants = try await store.read { try $0.grants.grants(tenantId: "a", userId: "u", entitlement: "club", forUpdate: false) }
            #expect(grants.count == 8)
            let ordered = grants.sorted { $0.from < $1.from }
            for (earlier, later) in zip(ordered, ordered.dropFirst()) {
                #expect(earlier.until == later.from, "each pass starts when the previous one ends")
            }
            #expect(ordered.last?.until == Self.now.addingTimeInterval(8 * 30 * 86_400))
            let held = GrantRules.entitlements(grants, now: Self.now.addingTimeInterval(100 * 86_400))
            #expect(held.first?.active == true)
        }
    }
}
