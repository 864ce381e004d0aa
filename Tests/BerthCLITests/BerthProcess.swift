import Foundation
import Synchronization
import Testing

/// Runs the built `berth` executable as a user would.
struct BerthProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var executable: URL {
        get throws {
            // The test runner is built next to the other products.
            let products = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            let url = products.appendingPathComponent("berth")
            try #require(FileManager.default.isExecutableFile(atPath: url.path), "build the berth product first (swift build)")
            return url
        }
    }

    /// Runs the build's `berth`, or another copy of it (`executable`).
    static func run(
        _ arguments: [String],
        stdin: String? = nil,
        in directory: URL? = nil,
        executable other: URL? = nil,
        environment extra: [String: String] = [:]
    ) async throws -> Result {
        let program = try other ?? executable
        return try await OffPool.run {
            try runBlocking(arguments, stdin: stdin, in: directory, executable: program, environment: extra)
        }
    }

    /// The child's whole run, blocking its thread: called only through `OffPool`.
    private static func runBlocking(
        _ arguments: [String],
        stdin: String?,
        in directory: URL?,
        executable program: URL,
        environment extra: [String: String]
    ) throws -> Result {
        let process = Process()
        process.executableURL = program
        process.arguments = arguments
        if !extra.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 } }
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe.forChild(), errors = Pipe.forChild(), input = Pipe.forChild()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input
        try process.runAlone()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes to the end before waiting, so a large output cannot block the child.
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }

    static func fixture(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        try #require(FileManager.default.fileExists(atPath: url.path), "no fixture \(name)")
        return url.path
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("berth-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

func jsonObject(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
}

extension Process {
    /// `run()`, one launch at a time in this test process: swift-corelibs-foundation's `Process.run`
    /// crashed once (SIGSEGV in its memcpy) while the CLI suites launched children concurrently.
    /// Only the launch is serialised; the children run side by side.
    ///
    /// It also waits (at most 120 s) while this process has many descriptors open. Foundation's
    /// `Process.run` reads /proc/self/fd to find the highest descriptor, copying each entry's whole
    /// 256-byte name field from readdir's buffer: once the listing fills that buffer (about 1,360
    /// entries), the copy can run off its last page, and it crashed the test process (SIGSEGV in
    /// memcpy, entries "1381", "1382"). A launch waits while a test holds hundreds of sockets
    /// (``ProcessLaunch/holdingMany(_:)``); callers launch off the test pool. (Waiting for the count
    /// to fall does not work: finished tests' SQLite files stay open, about 1,300 descriptors.)
    func runAlone() throws {
        try ProcessLaunch.lock.withLock { _ in
            var waited = 0
            while ProcessLaunch.heavy.load(ordering: .acquiring) > 0, waited < 6_000 {
                usleep(20_000)
                waited += 1
            }
            try run()
        }
    }
}

/// Blocking work (a child's pipes read to the end, `waitUntilExit`) on a thread of its own. The
/// test process's cooperative pool has one thread per core (two on CI): a test blocking one of them
/// for a child's whole run starved every other suite, and a loopback webhook delivery in another
/// suite once ran past its 10 s deadline.
enum OffPool {
    static func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}

enum ProcessLaunch {
    static let lock = Mutex(())
    /// Sections that hold hundreds of descriptors at once: no child is launched meanwhile.
    static let heavy = Atomic<Int>(0)

    /// Runs `body` while it holds many descriptors (a slow-loris flood's sockets): launches wait.
    static func holdingMany<T>(_ body: () async throws -> T) async rethrows -> T {
        heavy.add(1, ordering: .releasing)
        defer { heavy.subtract(1, ordering: .releasing) }
        return try await body()
    }
}

extension Pipe {
    /// A pipe no other child inherits. A child gets every descriptor its parent has open (Foundation's
    /// Process closes none), so a long-running `berth serve` started by one test kept the write end
    /// of another test's output pipe: that test then read forever, holding a thread of the test
    /// process's two, and the whole run hung. Made under the launch lock (no child starts between
    /// the pipe and its close-on-exec flag); the child's own stdio is a copy, which keeps none.
    static func forChild() -> Pipe {
        ProcessLaunch.lock.withLock { _ in
            let pipe = Pipe()
            for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
                _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
            }
            return pipe
        }
    }
}
