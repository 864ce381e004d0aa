import Foundation

/// The source of "now", injected everywhere time matters (tests move it).
public protocol BerthClock: Sendable {
    func now() -> Date
}

/// The real wall clock.
public struct SystemClock: BerthClock {
    public init() {}
    /// Whole milliseconds, the precision Berth stores, so responses and stored rows agree.
    public func now() -> Date { Date(epochMilliseconds: Date().epochMilliseconds) }
}

extension Date {
    /// UTC epoch milliseconds, the storage format for time.
    /// Never traps: a date beyond what Int64 milliseconds hold (±292 million years) is clamped.
    public var epochMilliseconds: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite else { return milliseconds.isNaN ? 0 : (milliseconds > 0 ? .max : .min) }
        return Int64(exactly: milliseconds) ?? (milliseconds > 0 ? .max : .min)
    }

    public init(epochMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(epochMilliseconds) / 1000)
    }
}
