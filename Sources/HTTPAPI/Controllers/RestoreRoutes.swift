import Domain
import Foundation
import Hummingbird
import UseCases

/// `POST /api/restore-purchases {jwsRepresentation | transactionId}`: applies to the calling user
/// what the customer's App Store history holds and Berth does not.
struct RestoreRoutes {
    let restorePurchases: RestorePurchases

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<UserContext> {
        let users = RouteCollection(context: UserContext.self)
        users.post("/api/restore-purchases", use: postRestorePurchases)
        return users
    }

    /// `POST /api/restore-purchases`
    func postRestorePurchases(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(RestoreRequest.self, from: request)
        let proof: RestorePurchases.Proof
        if let jws = body.jwsRepresentation, !jws.isEmpty {
            proof = .jws(jws)
        } else if let id = body.transactionId, !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ (48...57).contains($0) }) {
            proof = .owned(transactionId: id)
        } else {
            throw APIError(
                .badRequest,
                .missingField,
                "send jwsRepresentation (a transaction the device holds) or transactionId (one of the user's purchases)",
                field: "jwsRepresentation"
            )
        }
        let items = try await restorePurchases(runtime: context.tenant, userId: context.userId, proof: proof)
        return try JSONCoding.response(
            RestoreResponse(
                restored: items.count { $0.outcome == "restored" },
                items: items.map { .init(transactionId: $0.transactionId, productId: $0.productId, outcome: $0.outcome) }
            )
        )
    }
}

struct RestoreRequest: Codable, RefusesNull {
    var jwsRepresentation: String?
    var transactionId: String?
}

struct RestoreResponse: Codable {
    struct Item: Codable {
        var transactionId: String
        var productId: String
        /// `restored`, `known`, or a refusal's code.
        var outcome: String
    }
    var restored: Int
    var items: [Item]
}
