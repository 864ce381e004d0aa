import CHeapStats
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The process's own figures for `/metrics`, in Prometheus' conventional names: resident memory,
/// open and allowed descriptors, CPU seconds, start time. Read from `/proc/self` on Linux at each
/// scrape (a few small files); nil elsewhere or when a file cannot be read (never a trap).
struct ProcessStats {
    var residentBytes: Double?
    var openDescriptors: Double?
    var maximumDescriptors: Double?
    var cpuSeconds: Double?
    var startTimeSeconds: Double?
    /// glibc malloc: bytes handed out and not freed, and bytes freed but kept by the allocator (not
    /// returned to the system; counted in resident memory once touched).
    var heapInUseBytes: Double?
    var heapFreeBytes: Double?

    static func read() -> ProcessStats {
        var stats = ProcessStats()
        #if os(Linux)
        let pageSize = Double(max(1, sysconf(Int32(_SC_PAGESIZE))))
        let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Double(fields[1]) { stats.residentBytes = pages * pageSize }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") { stats.openDescriptors = Double(entries.count) }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { stats.maximumDescriptors = Double(limit.rlim_cur) }
        // /proc/self/stat: the fields after the command's closing parenthesis; utime and stime are
        // the 14th and 15th of the line, starttime the 22nd (in clock ticks since boot).
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 19, let user = Double(fields[11]), let system = Double(fields[12]) {
                stats.cpuSeconds = (user + system) / ticks
                if let started = Double(fields[19]), let uptime = Self.bootTime() { stats.startTimeSeconds = uptime + started / ticks }
            }
        }
        #endif
        let heap = berth_read_heap_stats()
        if heap.in_use > 0 {
            stats.heapInUseBytes = Double(heap.in_use)
            stats.heapFreeBytes = Double(heap.free)
        }
        return stats
    }

    /// Seconds since 1970 at which the machine booted (`btime` of /proc/stat).
    private static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// Records the figures as gauges of `metrics`.
    func record(in metrics: BerthMetrics) {
        let figures: [(String, Double?)] = [
            ("process_resident_memory_bytes", residentBytes), ("process_open_fds", openDescriptors),
            ("process_max_fds", maximumDescriptors), ("process_cpu_seconds_total", cpuSeconds),
            ("process_start_time_seconds", startTimeSeconds),
        ]
        for (name, value) in figures {
            if let value, value.isFinite { metrics.gauge(name, [], value) }
        }
        for (state, value) in [("in_use", heapInUseBytes), ("free", heapFreeBytes)] {
            if let value, value.isFinite { metrics.gauge("berth_process_heap_bytes", [("state", state)], value) }
        }
    }
}
