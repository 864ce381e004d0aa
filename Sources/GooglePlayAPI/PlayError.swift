/// A failure talking to Google (the token endpoint or the Play Developer API): Google's status and
/// reason when it answered, else the transport's.
public struct PlayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Google's HTTP status; nil when no answer came (or the failure is Berth's own, like a bad key).
    public var status: Int?
    /// Google's error reason (`purchaseTokenNotFound`, `invalid`, …), `network`, `unreadable_answer`, `service_account`, `token`.
    public var reason: String
    public var message: String

    public init(status: Int?, reason: String, message: String) {
        self.status = status
        self.reason = reason
        self.message = message
    }

    /// Worth trying again later: no answer, 401 (a token to buy again), 408, 429 or 5xx.
    public var isTransient: Bool {
        guard let status else { return reason == "network" || reason == "token" }
        return status == 401 || status == 408 || status == 429 || status >= 500
    }

    /// Google does not know the purchase token (never issued for this package and product, or too old to look up).
    public var isUnknownPurchase: Bool { status == 404 || status == 410 || (status == 400 && !isTransient) }

    public var description: String { "google play \(status.map(String.init) ?? "-") \(reason): \(message)" }
}
