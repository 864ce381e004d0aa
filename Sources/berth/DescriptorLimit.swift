import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files (`RLIMIT_NOFILE`).
enum DescriptorLimit {
    /// Raises the soft limit to the hard one and returns the soft limit in force afterwards (the
    /// one before when raising is refused). Limits beyond `Int` or "unlimited" count as 1,048,576.
    static func raiseToHard(logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            logger.warning("the open-file limit could not be read; assuming 1024")
            return 1024
        }
        let ceiling: rlim_t = 1 << 20
        let wanted = min(limit.rlim_max, ceiling)
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                limit = raised
            } else {
                logger.warning("the open-file limit stays at \(limit.rlim_cur) (raising it to \(wanted) was refused)")
            }
        }
        return Int(clamping: min(limit.rlim_cur, ceiling))
    }
}
