import Foundation

#if canImport(Glibc)
import Glibc
#endif

#if !FUZZING
/// Blind mutation fuzzing, for where a libFuzzer build costs more than it finds (CI): each round
/// takes a saved input (or a past mutation that did not crash), changes it in one to eight places
/// (bits, bytes, numbers at their limits, JSON and base64 punctuation, cut, repeated or spliced
/// with another input) and runs it through the target. No coverage guides it, so it finds less per
/// second than `scripts/fuzz` with libFuzzer; it needs no second build. A finding ends the process
/// as in `replay`; the input that caused it is written to the file `current` names, by a signal
/// handler as the process dies (``CrashKeeper``), not before every run.
enum Mutator {
    /// Values that sit at the edges of what parsers read: integer limits, signs, exponents,
    /// escapes, nesting, base64url's alphabet and JWS separators.
    static let tokens: [[UInt8]] = [
        "0", "-1", "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e999", "-0", "0.0000001",
        "\"", "\\", "\\u0000", "\\ud800", "{", "}", "[", "]", ",", ":", "null", "true", "false", ".", "..", "=", "-", "_", "/", "+",
        "\u{0}", "\u{7f}", "\u{fffd}", "eyJ", "AAAA", "%00", "\r\n",
    ].map { Array($0.utf8) }

    /// Runs mutations for `seconds` and returns how many inputs ran. Deterministic for one `seed`
    /// (apart from when time runs out): the seed is printed, so that a finding can be run again.
    static func run(_ target: FuzzTarget, corpus seeds: [[UInt8]], seconds: Int, seed: UInt64, current: String?) -> Int {
        var random = SplitMix(seed: seed)
        var pool = seeds.isEmpty ? [[UInt8]()] : seeds
        let end = ContinuousClock.now + .seconds(seconds)
        var runs = 0
        if let current { CrashKeeper.install(path: current) }
        while ContinuousClock.now < end {
            var input = pool[random.below(pool.count)]
            for _ in 0...random.below(8) { mutate(&input, random: &random, pool: pool) }
            if input.count > CrashKeeper.capacity { input.removeLast(input.count - CrashKeeper.capacity) }
            if current != nil { CrashKeeper.hold(input) }
            target.run(input)
            runs += 1
            // Keep some survivors to mutate further (a bounded pool: the first inputs stay).
            if random.below(16) == 0 {
                if pool.count < 4096 { pool.append(input) } else { pool[seeds.count + random.below(max(1, 4096 - seeds.count))] = input }
            }
        }
        return runs
    }

    static func mutate(_ input: inout [UInt8], random: inout SplitMix, pool: [[UInt8]]) {
        let position = input.isEmpty ? 0 : random.below(input.count + 1)
        switch random.below(8) {
        case 0 where !input.isEmpty:  // flip a bit
            let at = random.below(input.count)
            input[at] ^= UInt8(1 << random.below(8))
        case 1 where !input.isEmpty:  // any byte
            input[random.below(input.count)] = UInt8(truncatingIfNeeded: random.next())
        case 2:  // an edge token
            input.insert(contentsOf: tokens[random.below(tokens.count)], at: position)
        case 3 where !input.isEmpty:  // cut a stretch
            let length = 1 + random.below(min(64, input.count - min(position, input.count - 1)))
            let start = min(position, input.count - 1)
            input.removeSubrange(start..<min(input.count, start + length))
        case 4 where !input.isEmpty:  // repeat a stretch (nesting, long runs)
            let start = random.below(input.count)
            let length = 1 + random.below(min(32, input.count - start))
            let piece = Array(input[start..<start + length])
            for _ in 0..<(1 + random.below(64)) { input.insert(contentsOf: piece, at: start) }
        case 5:  // splice in part of another input
            let other = pool[random.below(pool.count)]
            guard !other.isEmpty else { return }
            let start = random.below(other.count)
            input.insert(contentsOf: other[start..<min(other.count, start + 1 + random.below(256))], at: position)
        case 6 where !input.isEmpty:  // a digit run made larger
            input.insert(contentsOf: Array(repeating: UInt8(ascii: "9"), count: 1 + random.below(40)), at: position)
        default:  // a random byte inserted
            input.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
        }
    }
}

/// Keeps the input being run in a buffer set aside at start and, when the process dies of a trap
/// or a fault, writes it to a file opened at start (async-signal-safe: `write` of a global buffer),
/// then dies of the same signal.
enum CrashKeeper {
    static let capacity = 65_536
    nonisolated(unsafe) static var buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    nonisolated(unsafe) static var length = 0
    nonisolated(unsafe) static var descriptor: Int32 = -1

    static func install(path: String) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { return }
        for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            _ = Glibc.signal(signal) { number in
                if CrashKeeper.descriptor >= 0 {
                    _ = ftruncate(CrashKeeper.descriptor, 0)
                    _ = pwrite(CrashKeeper.descriptor, CrashKeeper.buffer, CrashKeeper.length, 0)
                }
                _ = Glibc.signal(number, SIG_DFL)
                _ = raise(number)
            }
        }
    }

    static func hold(_ input: [UInt8]) {
        let count = min(input.count, capacity)
        input.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { buffer.update(from: base, count: count) }
        }
        length = count
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same mutations.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A number in 0..<bound (bound ≥ 1).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }
}
#endif
