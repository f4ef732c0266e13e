import Testing

@testable import HeraldAPI

@Suite("RequestDeadlines")
struct RequestDeadlinesTests {
    /// Waits until its task is cancelled, then throws.
    private static func untilCancelled() async throws {
        for await _ in AsyncStream<Never> { _ in } {}
        try Task.checkCancellation()
    }

    @Test("a request past its deadline answers timed_out")
    func overdueAnswersTimedOut() async throws {
        let deadlines = RequestDeadlines(timeout: .milliseconds(1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await deadlines.run() }
            defer { group.cancelAll() }
            let error = await #expect(throws: APIError.self) {
                try await deadlines.guarding { try await Self.untilCancelled() }
            }
            #expect(error?.code == .timedOut)
        }
    }

    @Test(
        "an operation that already answered 503 (a readiness probe finding the database unreachable) keeps its answer when the watchdog passes its deadline and the request's in one look"
    )
    func nestedUnavailableAnswerIsKept() async throws {
        // Both deadlines are long past when the watchdog first looks (after 100 ms): it cancels
        // both; the inner one throws timed_out, the probe answers "database unavailable", and
        // that answer — not a second timed_out — is the request's.
        let deadlines = RequestDeadlines(timeout: .milliseconds(1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await deadlines.run() }
            defer { group.cancelAll() }
            let error = await #expect(throws: APIError.self) {
                try await deadlines.guarding {
                    do {
                        try await deadlines.guarding(timeout: .milliseconds(1)) { try await Self.untilCancelled() }
                    } catch {
                        throw APIError.unavailable
                    }
                }
            }
            #expect(error?.code == .databaseUnavailable)
        }
    }
}
