import Foundation
import StoreTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `berth serve` child process on 127.0.0.1 with its own folder, catalog, database and test CA.
final class ServerProcess: Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let directory: URL
    /// Distinguishes instances sharing one folder (their port files).
    let name: String
    /// Set when this instance shares another's folder (and catalog, CA and database): it leaves the folder to its owner.
    private let ownsDirectory: Bool
    /// The port the running server bound (the system chooses one at each start).
    var port: Int { boundPort.withLock { $0 } }
    private let boundPort = Mutex(0)
    /// The address the running server listens on (`BERTH_HOST` of its start, else 127.0.0.1).
    private let host = Mutex("127.0.0.1")
    private let process = Mutex<Process?>(nil)

    /// A second instance in `other`'s folder: same catalog, test CA and database settings.
    init(sharing other: ServerProcess, name: String) {
        directory = other.directory
        self.name = name
        ownsDirectory = false
    }

    init() async throws {
        name = "berth"
        ownsDirectory = true
        directory = try BerthProcess.temporaryDirectory()
        try FileManager.default.copyItem(
            at: Self.repository.appendingPathComponent("products.json"),
            to: directory.appendingPathComponent("products.json")
        )
        // No migrations folder: berth applies the ones compiled into it.
        let made = try await BerthProcess.run(["testkit", "init", "berth-ca"], in: directory)
        try #require(made.status == 0, "\(made.stderr)")
    }

    func berth(_ arguments: [String], environment: [String: String] = [:]) async throws -> BerthProcess.Result {
        try await BerthProcess.run(arguments, in: directory, environment: environment)
    }

    /// Starts the server (the build's `berth`, or `executable`) and waits until /healthz answers (at
    /// most 20 s). Its standard error goes to `errorLog` when given (the logs), else nowhere.
    /// `openFileLimit` runs it under `ulimit -n` (soft and hard) of that many descriptors.
    func start(environment extra: [String: String] = [:], errorLog: URL? = nil, executable: URL? = nil, openFileLimit: Int? = nil) async throws {
        let process = Process()
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        let berth = try executable ?? BerthProcess.executable
        let portFile = directory.appendingPathComponent("\(name).port")
        try? FileManager.default.removeItem(at: portFile)
        let arguments = ["serve", "--port", "0", "--port-file", portFile.path]
        if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", berth.path] + arguments
        } else {
            process.executableURL = berth
            process.arguments = arguments
        }
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        if let errorLog {
            try #require(FileManager.default.createFile(atPath: errorLog.path, contents: nil), "cannot create \(errorLog.path)")
            process.standardError = try FileHandle(forWritingTo: errorLog)
        } else {
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        }
        host.withLock { $0 = extra["BERTH_HOST"] ?? "127.0.0.1" }
        // Launched off the test pool: a launch may wait for a descriptor-heavy test to end.
        try await OffPool.run { try process.runAlone() }
        self.process.withLock { $0 = process }
        let answered = try await eventually(every: .milliseconds(100)) {
            guard let text = try? String(contentsOf: portFile, encoding: .utf8), let bound = Int(text) else { return false }
            boundPort.withLock { $0 = bound }
            return (try? await request("GET", "/healthz", headers: [:]))?.status == 200
        }
        if !answered { Issue.record("berth serve did not answer /healthz within 2 minutes") }
    }

    /// SIGKILL: no graceful shutdown, no flush.
    func kill9() {
        guard let pid = process.withLock({ $0?.processIdentifier }) else { return }
        kill(pid, SIGKILL)
        waitForExit()
    }

    /// SIGTERM, then the exit status once the process is gone.
    func stopAndWait() -> Int32 {
        guard let process = process.withLock({ $0 }) else { return -1 }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        self.process.withLock { $0 = nil }
        return process.terminationStatus
    }

    /// The child's resident memory in KiB (`VmRSS` of /proc), while it runs.
    var residentKilobytes: Int? {
        guard let pid = process.withLock({ $0?.processIdentifier }),
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return line.split(separator: " ").compactMap { Int($0) }.first
    }

    /// Whether the child process still runs.
    var isRunning: Bool { process.withLock { $0?.isRunning ?? false } }

    func stop() {
        guard let pid = process.withLock({ $0?.processIdentifier }) else { return }
        kill(pid, SIGTERM)
        waitForExit()
    }

    private func waitForExit() {
        process.withLock { process in
            process?.waitUntilExit()
            process = nil
        }
    }

    func cleanUp() {
        kill9()
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    struct HTTPReply: Sendable {
        var status: Int
        var data: Data
        var headers: [String: String] = [:]
        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:] }
    }

    func request(_ method: String, _ path: String, headers: [String: String], body: [String: Any]? = nil) async throws -> HTTPReply {
        try await request(method, path, headers: headers, data: try body.map { try JSONSerialization.data(withJSONObject: $0) })
    }

    func request(_ method: String, _ path: String, headers: [String: String], data body: Data?) async throws -> HTTPReply {
        var request = URLRequest(url: URL(string: "http://\(host.withLock { $0 }):\(port)\(path)")!)
        request.httpMethod = method
        // URLSession's idle timeout: one full run on two busy cores (the release build beside it) once
        // passed 10 s on a request Berth answers in milliseconds alone; a request that hangs still fails.
        request.timeoutInterval = 30
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] { headers[String(describing: name).lowercased()] = String(describing: value) }
        return HTTPReply(status: http?.statusCode ?? 0, data: data, headers: headers)
    }
}
