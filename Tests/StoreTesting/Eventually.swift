/// Waits until `condition` holds, asking again every `interval`: true once it does, false if `bound`
/// passed first. The condition is the event a test waits for; the bound is only against a hang, two
/// minutes by default, far beyond what a two-core machine busy with a release build beside the suite
/// needs for work Berth does in milliseconds alone.
public func eventually(
    every interval: Duration = .milliseconds(50),
    bound: Duration = .seconds(120),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + bound
    while true {
        if try await condition() { return true }
        if clock.now >= deadline { return false }
        try await Task.sleep(for: interval)
    }
}
