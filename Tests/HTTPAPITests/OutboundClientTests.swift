import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOHTTP1
import OutboundHTTP
import Testing

@Suite("The outbound client berth serve gives the Apple, Google, Stripe and key-set clients")
struct OutboundClientTests {
    @Test("a provider's redirect is answered as it is, never followed to wherever it points")
    func refusesRedirects() async throws {
        let router = Router()
        router.get("/moved") { _, _ in Response(status: .movedPermanently, headers: [.location: "/elsewhere"]) }
        router.get("/elsewhere") { _, _ in "followed" }
        try await Application(router: router).test(.live) { server in
            let port = try #require(server.port)
            let client = OutboundClient.make()
            do {
                let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/moved"), timeout: .seconds(30))
                #expect(response.status == .movedPermanently, "the redirect was followed: \(response.status)")
            } catch {
                Issue.record("the redirect was not answered as it is: \(error)")
            }
            try await client.shutdown()
        }
    }
}
