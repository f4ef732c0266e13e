/// Waits until `condition` holds or `timeout` passes, and says whether it holds: how the tests
/// wait for something another task or process does, instead of sleeping a fixed time and then
/// asserting. `condition` is checked again every `poll` (a database or metrics read each time, so
/// not in a busy loop); a loaded machine only makes the wait longer, never the answer different.
public func eventually(
    timeout: Duration = .seconds(60), poll: Duration = .milliseconds(100), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: min(poll, deadline - ContinuousClock.now))
    }
    return try await condition()
}
