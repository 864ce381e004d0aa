import Foundation

/// How background work tries again after failures: the one retry value every job uses (webhook
/// deliveries, Google Play acknowledgements, card-rail calls to Stripe, consumption answers to
/// Apple). Delays are in seconds after `attempts` failures (1 = after the first); the jobs keep the
/// attempt count and the next due time in their own rows, so a restart or another instance goes on
/// where this one stopped.
public struct JobRetry: Hashable, Sendable {
    enum Shape: Hashable, Sendable {
        /// `first`, doubling, at most `cap`.
        case exponential(first: TimeInterval, cap: TimeInterval)
        /// One delay per failure; the last repeats.
        case steps([TimeInterval])
    }

    let shape: Shape
    /// Attempts before the work is given up (nil: until its own deadline or for ever).
    public let maximumAttempts: Int?

    public static func exponential(first: TimeInterval, cap: TimeInterval, maximumAttempts: Int? = nil) -> JobRetry {
        JobRetry(shape: .exponential(first: first, cap: cap), maximumAttempts: maximumAttempts.map { max(1, $0) })
    }

    public static func steps(_ delays: [TimeInterval], maximumAttempts: Int? = nil) -> JobRetry {
        JobRetry(shape: .steps(delays.isEmpty ? [60] : delays), maximumAttempts: maximumAttempts.map { max(1, $0) })
    }

    /// The wait after `attempts` failures (at least the first delay; never traps on any count).
    public func delay(afterAttempts attempts: Int) -> TimeInterval {
        let index = max(attempts, 1) - 1
        switch shape {
        case .exponential(let first, let cap):
            return min(first * Double(1 << min(index, 30)), cap)
        case .steps(let delays):
            return delays[min(index, delays.count - 1)]
        }
    }

    /// Whether `attempts` failures leave another try.
    public func triesAgain(afterAttempts attempts: Int) -> Bool { maximumAttempts.map { attempts < $0 } ?? true }
}

extension JobRetry {
    /// Webhooks: 5 s, doubling, at most an hour; 30 attempts (about a day), then a dead letter an
    /// operator can send again.
    public static let webhooks = JobRetry.exponential(first: 5, cap: 3600, maximumAttempts: 30)
    /// Google Play acknowledgements: 2 s, doubling, at most 10 minutes (a purchase has three days; a
    /// brief outage must not use them up, a long one must not hammer Google).
    public static let playAcknowledgements = JobRetry.exponential(first: 2, cap: 600)
    /// The card rail's calls to Stripe (refunds, status checks): 10 s, doubling, at most 10 minutes.
    public static let cardPayments = JobRetry.exponential(first: 10, cap: 600)
    /// Consumption answers to Apple: 30 s, 2, 10 and 30 minutes, then hourly, within Apple's 12-hour window.
    public static let consumptionAnswers = JobRetry.steps([30, 120, 600, 1800, 3600])
}
