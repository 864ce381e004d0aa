import AsyncHTTPClient
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import SQLStore
import StoreTesting
import StripeAPI
import StripeStandIn
import Synchronization
import Testing
import UseCases

/// A tenant whose rentals are paid by card, Stripe played by the stand-in on loopback; its signed
/// webhooks reach ``ReceiveStripeEvent`` through a receiver of this test's own (no Berth server).
enum CardRailFixture {
    static let secret = "whsec_test_usecases_card_rail_0123456789"

    static func tenant() throws -> Tenant {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "timeZone": "Europe/Rome", "holdMinutes": 15,
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "stripe": {"secretKeyEnv": "A_STRIPE_KEY", "publishableKey": "pk_test_a", "webhookSecretEnvs": ["A_STRIPE_WEBHOOK"],
                        "apiBaseEnv": "A_STRIPE_BASE", "cardHoldMinutes": 20},
             "products": [{"id": "rental.day", "kind": "booking", "type": "Consumable", "title": "Rental"}],
             "resources": [{"id": "boat", "kind": "rental", "name": "Gozzo", "pricePerDayMinor": 8000, "units": 1}],
             "bookingRules": {"rentalPriceBands": [{"maxPriceMinor": 1000000, "productId": "rental.day"}], "experienceProducts": {},
                              "paymentRails": ["app_store", "card"]}}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return tenant
    }

    /// The stand-in and a webhook receiver handing each event to `receive`, each on a port of its own.
    static func withStripe(
        clock: ManualClock,
        _ body: @Sendable (StripeStandIn, TenantRuntime, _ receiveWith: @escaping @Sendable (ReceiveStripeEvent) -> Void) async throws -> Void
    ) async throws {
        let standIn = StripeStandIn(webhookSecrets: [secret], now: { clock.now() })
        let receiver = ReceiverBox()
        try await Application(router: standIn.router()).test(.live) { stripe in
            try await Application(router: hooks(receiver)).test(.live) { hook in
                let runtime = try await TenantRuntime(
                    tenant: try tenant(),
                    baseDirectory: FileManager.default.temporaryDirectory,
                    environment: [
                        "A_STRIPE_KEY": "sk_test_berth_standin", "A_STRIPE_WEBHOOK": secret,
                        "A_STRIPE_BASE": "http://127.0.0.1:\(try #require(stripe.port))",
                    ],
                    clock: clock,
                    httpClient: .shared,
                    logger: Logger(label: "use-cases-test")
                )
                try #require(runtime.stripe != nil, "the tenant's card rail was not built")
                standIn.state.withLock { $0.webhookURL = "http://127.0.0.1:\(hook.port ?? 0)/hook" }
                try await body(standIn, runtime) { receive in receiver.set(receive, runtime) }
            }
        }
    }

    /// The test's webhook receiver: each signed event to the use case `receiver` holds.
    static func hooks(_ receiver: ReceiverBox) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            guard let (receive, runtime) = receiver.current else { return Response(status: .serviceUnavailable) }
            let signature = request.headers[HTTPField.Name("Stripe-Signature")!]
            _ = try await receive(runtime: runtime, body: Data(body.readableBytesView), signature: signature)
            return Response(status: .ok)
        }
        return router
    }

    /// Which use case (and runtime) the test's receiver hands events to.
    final class ReceiverBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value: (ReceiveStripeEvent, TenantRuntime)?
        var current: (ReceiveStripeEvent, TenantRuntime)? { lock.withLock { value } }
        func set(_ receive: ReceiveStripeEvent, _ runtime: TenantRuntime) { lock.withLock { value = (receive, runtime) } }
    }
}

@Suite("The card rail through the use cases, on every backend")
struct CardRailUseCasesTests {
    @Test(
        "a rental paid by card: one PaymentIntent for its price, the hold extended for 3-D Secure, confirmed exactly once though Stripe sends the success twice and an older decline after it",
        arguments: StoreBackend.available
    )
    func rentalPaidByCard(backend: StoreBackend) async throws {
        let clock = ManualClock(StoreBackend.now)
        try await CardRailFixture.withStripe(clock: clock) { standIn, runtime, receiveWith in
            try await backend.run { store in
                let logger = Logger(label: "use-cases-test")
                receiveWith(ReceiveStripeEvent(store: store, clock: clock, logger: logger))
                let booking = try await CreateBooking(store: store, clock: clock)(
                    .init(
                        runtime: runtime,
                        userId: "marco",
                        createdVia: .user("marco"),
                        request: BookingRequest(
                            resourceId: "boat",
                            start: SeasonFixture.day(3),
                            end: SeasonFixture.day(4),
                            slot: nil,
                            seats: nil
                        )
                    )
                )
                let start = StartCardPayment(store: store, clock: clock, logger: logger)
                let started = try await start(runtime: runtime, userId: "marco", bookingId: booking.id)
                #expect(started.created && started.payment.amountMinor == 8000 && started.publishableKey == "pk_test_a")
                #expect(abs(started.holdExpiresAt.timeIntervalSince(clock.now()) - 20 * 60) < 1, "the hold covers 3-D Secure")
                let intentId = try #require(started.payment.providerRef)
                #expect(standIn.intent(intentId)?.amount == 8000)
                let again = try await start(runtime: runtime, userId: "marco", bookingId: booking.id)
                #expect(!again.created && again.payment.providerRef == intentId, "asking again returns the open PaymentIntent")
                let refused = await SeasonFixture.refusal { _ = try await start(runtime: runtime, userId: "giulia", bookingId: booking.id) }
                #expect(refused == .bookingNotFound, "another user's booking is not found")

                let deliveries = try await standIn.succeed(intentId, sending: .init(duplicate: true, outOfOrder: true))
                #expect(deliveries.map(\.status) == [200, 200, 200, 200], "\(deliveries)")
                let paid = try #require(try await store.read { try $0.bookings.booking(id: booking.id, tenantId: "a", forUpdate: false) })
                #expect(paid.status == .confirmed)
                let purchases = try await store.read { try $0.purchases.purchases(tenantId: "a", filter: PurchaseFilter(), page: Page()) }
                #expect(purchases.total == 1 && purchases.items.first?.store == .card && purchases.items.first?.transactionId == intentId)
                #expect(purchases.items.first?.environment == .test)
                let paidAgain = await SeasonFixture.refusal { _ = try await start(runtime: runtime, userId: "marco", bookingId: booking.id) }
                #expect(paidAgain == .bookingNotPayable)
            }
        }
    }
}
