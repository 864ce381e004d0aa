import Domain
import Foundation
import SQLStore
import Testing

/// The App Store lifecycle's tables on every backend: consumption consents (the latest answer per
/// user) and the notification-history marks (per tenant and environment, never moving back).
@Suite("AppleLifecycleConformance")
struct AppleLifecycleConformance {
    typealias Backend = StoreConformance.StoreBackend
    static let now = StoreConformance.now

    @Test("a consent is the user's latest answer, per tenant; none before the first", arguments: Backend.available)
    func consents(backend: Backend) async throws {
        try await backend.scope { store in
            #expect(try await store.read { try $0.consents.consent(tenantId: "a", userId: "ana") } == nil)
            let yes = ConsumptionConsent(tenantId: "a", userId: "ana", consented: true, textVersion: "v1", recordedAt: Self.now)
            try await store.write { try $0.consents.record(yes) }
            #expect(try await store.read { try $0.consents.consent(tenantId: "a", userId: "ana") } == yes)
            let no = ConsumptionConsent(tenantId: "a", userId: "ana", consented: false, textVersion: "v2", recordedAt: Self.now.addingTimeInterval(60))
            try await store.write { try $0.consents.record(no) }
            #expect(try await store.read { try $0.consents.consent(tenantId: "a", userId: "ana") } == no)
            #expect(try await store.read { try $0.consents.consent(tenantId: "b", userId: "ana") } == nil, "another tenant's user is another user")
        }
    }

    @Test("a history mark is per tenant and environment and only moves forward", arguments: Backend.available)
    func historyMarks(backend: Backend) async throws {
        try await backend.scope { store in
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "a", environment: "Sandbox") } == nil)
            let later = Self.now.addingTimeInterval(3600)
            try await store.write { try $0.appleHistory.setMark(tenantId: "a", environment: "Sandbox", checkedUntil: later, at: later) }
            try await store.write { try $0.appleHistory.setMark(tenantId: "a", environment: "Sandbox", checkedUntil: Self.now, at: later) }
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "a", environment: "Sandbox") } == later, "an older reading does not move it back")
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "a", environment: "Production") } == nil)
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "b", environment: "Sandbox") } == nil)
        }
    }
}
