import Foundation

/// The one JSON encoder configuration of Berth's own output (HTTP answers, webhook bodies, audit
/// details): sorted keys, unescaped slashes.
public enum BerthJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// One shared instance for the hot paths (an encoder is safe to use from several tasks).
    public static let shared = encoder()
}

extension BerthJSON {
    /// A UTC timestamp with milliseconds (`2026-10-14T12:00:00.000Z`), as Berth's own answers write time.
    public static func timestamp(_ date: Date) -> String {
        UTCTimestamp.format(epochMilliseconds: date.epochMilliseconds, milliseconds: true)
            ?? date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// A UTC timestamp in whole seconds (`2026-10-14T12:00:00Z`): what Swift's default `.iso8601`
    /// decoding strategy reads.
    public static func secondsTimestamp(_ date: Date) -> String {
        let whole = Date(timeIntervalSince1970: (date.timeIntervalSince1970).rounded(.down))
        return UTCTimestamp.format(epochMilliseconds: whole.epochMilliseconds, milliseconds: false) ?? whole.formatted(.iso8601)
    }
}
