import Logging
import Synchronization

/// The warnings tenants give while they are set up, gathered into one line (``TenantRegistry/load(_:baseDirectory:environment:logger:)``).
final class StartupNotes: Sendable {
    struct Note: Sendable {
        var tenant: String
        var message: String
    }

    private let state = Mutex<(gathering: Bool, notes: [Note])>((true, []))

    var isGathering: Bool { state.withLock { $0.gathering } }
    var gathered: [Note] { state.withLock { $0.notes } }

    /// From now on warnings are logged as they come (tenants log at run time too).
    func stop() { state.withLock { $0.gathering = false } }

    /// Keeps `message` if still gathering; answers whether it did.
    func keep(_ message: String) -> Bool {
        state.withLock { state in
            guard state.gathering else { return false }
            // Tenants' setup messages begin "tenant ID: …".
            let tenant = message.hasPrefix("tenant ") ? String(message.dropFirst(7).prefix { $0 != ":" }) : "?"
            state.notes.append(Note(tenant: tenant, message: message))
            return true
        }
    }
}

/// Forwards everything to `inner`, except warnings while the notes gather: those are kept and
/// logged at debug level.
struct GatheringLogHandler: LogHandler {
    var inner: any LogHandler
    let notes: StartupNotes

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        if event.level == .warning, notes.keep(event.message.description) {
            guard inner.logLevel <= .debug else { return }
            var kept = event
            kept.level = .debug
            inner.log(event: kept)
            return
        }
        inner.log(event: event)
    }
}
