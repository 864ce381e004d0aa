import Foundation

/// How calls to Apple are retried: exponential backoff with full jitter, honouring Retry-After,
/// for 429, 5xx, timeouts and network failures only.
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// Per-attempt deadline.
    public var timeout: Duration

    public init(maxAttempts: Int = 4, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10), timeout: Duration = .seconds(10)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.timeout = timeout
    }

    /// The wait before attempt `attempt + 1`: Retry-After when Apple sent one (capped), else backoff.
    func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return min(retryAfter, maxDelay) }
        let exponent = min(attempt - 1, 20)
        let ceiling = min(baseDelay * (1 << exponent), maxDelay)
        let milliseconds = Double(ceiling.components.seconds) * 1000 + Double(ceiling.components.attoseconds) / 1e15
        return .milliseconds(Int64(Double.random(in: milliseconds / 2...max(milliseconds, 1))))
    }

    /// Parses Retry-After in seconds (the form Apple uses).
    static func retryAfter(_ header: String?) -> Duration? {
        guard let header, let seconds = Int(header.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(seconds)
    }
}
