/// A secret from the environment (a webhook signing secret, a shared secret): its text is read
/// through `value` only, and every way Swift describes a value (`String(describing:)`,
/// `String(reflecting:)`, `dump`, the mirror a logger or a service runner walks) shows
/// `<redacted>`, so a secret cannot reach a log by being part of something logged.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let value: String

    public init(_ value: String) { self.value = value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
