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
    public var epochMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    public init(epochMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(epochMilliseconds) / 1000)
    }
}
