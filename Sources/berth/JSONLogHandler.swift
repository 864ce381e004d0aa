import Foundation
import Logging

/// `BERTH_LOG_FORMAT=json`: one JSON object per line on standard error (`time`, `level`, `label`,
/// `message`, `error` when the call passed one, then the metadata, `request_id` among them), for log shippers.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: Any] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { object[key] = Self.plain(value) }
        object["time"] = ISO8601DateFormatter.string(
            from: Date(),
            timeZone: TimeZone(identifier: "UTC")!,
            formatOptions: [.withInternetDateTime, .withFractionalSeconds]
        )
        object["level"] = event.level.rawValue
        object["label"] = label
        object["message"] = event.message.description
        if let error = event.error { object["error"] = String(describing: error) }
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        data.append(0x0A)
        FileHandle.standardError.write(data)
    }

    static func plain(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(plain)
        case .dictionary(let values): values.mapValues(plain)
        }
    }
}

/// Chooses the log format once per process, before the first logger is made.
let logFormatChosen: Bool = {
    if ProcessInfo.processInfo.environment["BERTH_LOG_FORMAT"] == "json" {
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        return true
    }
    return false
}()
