import Foundation

/// The wire format of one webhook, exactly as signed and sent:
/// `{"createdAt", "data", "id": "evt_…", "sequence"?, "tenant", "type"}` with sorted keys.
public struct WebhookEnvelope: Encodable, Hashable, Sendable {
    public var id: String
    public var type: String
    public var tenant: String
    public var createdAt: String
    /// Per subject (a booking), 1, 2, 3…: the order in which its events happened and are delivered.
    public var sequence: Int64?
    public var data: [String: String]

    public init(outboxId: Int64, event: WebhookEvent, tenantId: String, at: Date, sequence: Int64?) {
        id = "evt_\(outboxId)"
        type = event.type.rawValue
        tenant = tenantId
        createdAt = BerthJSON.timestamp(at)
        self.sequence = sequence
        data = event.data
    }

    /// The JSON body.
    public func json() throws -> String {
        String(decoding: try BerthJSON.shared.encode(self), as: UTF8.self)
    }
}
