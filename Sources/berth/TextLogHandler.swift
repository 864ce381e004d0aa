import Logging

/// The default text lines: swift-log's `StreamLogHandler` format, with the logger's own metadata
/// handed to it only when a line is written. `StreamLogHandler` renders its metadata to text each
/// time a key is set, and Hummingbird sets one (`hb.request.id`) on a copy of the logger for every
/// request: 4 % of a `GET /healthz`'s CPU (perf), for lines that are almost never written.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata: Logger.Metadata = [:]

    init(_ stream: StreamLogHandler) {
        self.stream = stream
        self.metadata = stream.metadata
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var stream = self.stream
        stream.metadata = metadata
        stream.log(event: event)
    }
}
