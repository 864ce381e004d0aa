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
