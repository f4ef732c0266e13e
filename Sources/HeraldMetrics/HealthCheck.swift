import Foundation
import HeraldTiming

/// One thing a process checks about itself for `/healthz` (liveness: it works and has no fatal
/// state) or `/readyz` (readiness: its dependencies answer and it can take work).
public struct HealthCheck: Sendable {
    /// What a check found.
    public enum Result: Sendable, Equatable {
        /// Fine; the detail says what was seen (`"3 partitions"`, `"waiting for assignment"`).
        case pass(String)
        /// Not fine; the detail says what failed and, where it can, what to look at.
        case fail(String)

        public var passed: Bool { if case .pass = self { true } else { false } }
    }

    /// A short stable name: `postgres`, `kafka`, `kafka_consumer_jobs`, …
    public var name: String
    /// Runs the check. It may be slow; ``HealthProbe`` gives it a deadline.
    public var check: @Sendable () async -> Result

    public init(_ name: String, check: @escaping @Sendable () async -> Result) {
        self.name = name
        self.check = check
    }
}

/// A set of checks answered as one JSON report: all run at once, each within ``deadline``.
public struct HealthProbe: Sendable {
    public var checks: [HealthCheck]
    /// A check that has not answered by then fails with "no answer within …".
    public var deadline: Duration

    public init(_ checks: [HealthCheck], deadline: Duration = .seconds(2)) {
        self.checks = checks
        self.deadline = deadline
    }

    /// The outcome of every check, in the order given.
    public struct Report: Sendable, Equatable {
        public var results: [(name: String, result: HealthCheck.Result)]
        public var passed: Bool { results.allSatisfy { $0.result.passed } }

        public static func == (left: Report, right: Report) -> Bool {
            left.results.map(\.name) == right.results.map(\.name)
                && left.results.map(\.result) == right.results.map(\.result)
        }

        /// `{"status": "ok" | "failing", "checks": {"postgres": {"status": "pass", "detail": "…"}, …}}`,
        /// keys sorted.
        public var json: String {
            var checks: [String: [String: String]] = [:]
            for (name, result) in results {
                switch result {
                case .pass(let detail): checks[name] = ["status": "pass", "detail": detail]
                case .fail(let detail): checks[name] = ["status": "fail", "detail": detail]
                }
            }
            let object: [String: Any] = ["status": passed ? "ok" : "failing", "checks": checks]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// One check's result, tagged with the check's position.
    private struct Answer: Sendable {
        var index: Int
        var result: HealthCheck.Result
    }

    /// Runs every check concurrently.
    ///
    /// Results are gathered by position in a dictionary, never written into a preallocated
    /// array through a destructured task-group tuple: that form trapped with "Index out of range"
    /// in release builds (Swift 6.3.1, -O) on the first `/readyz` of herald-center and
    /// herald-sender, while debug builds passed (`make check-image` found it).
    public func run() async -> Report {
        let deadline = self.deadline
        let answers = await withTaskGroup(of: Answer.self, returning: [Int: HealthCheck.Result].self) { group in
            for (index, check) in checks.enumerated() {
                group.addTask {
                    do {
                        return Answer(index: index, result: try await withDeadline(deadline) { await check.check() })
                    } catch {
                        return Answer(index: index, result: .fail("no answer within \(deadline)"))
                    }
                }
            }
            var answers: [Int: HealthCheck.Result] = [:]
            for await answer in group { answers[answer.index] = answer.result }
            return answers
        }
        return Report(
            results: checks.enumerated().map { index, check in (check.name, answers[index] ?? .fail("not run")) })
    }
}

extension HealthCheck {
    /// Liveness of Swift's cooperative pool: a task is scheduled and answers. A pool whose
    /// threads are all blocked cannot run it, and the probe's deadline fails it.
    public static let cooperativePool = HealthCheck("tasks") { .pass("the task pool answers") }
}
