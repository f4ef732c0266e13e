import Foundation
import HeraldAPIContract

/// A push's report as CSV (`GET /v1/pushes/{id}/report`, docs/engagement.md#the-report): one line
/// per figure, `scope,metric,value`, from the push's status as `GET /v1/pushes/{id}` answers it.
/// Pure: the status in, the text out.
struct PushReport {
    let status: Components.Schemas.PushStatus

    var csv: String {
        var lines = ["scope,metric,value"]
        func add(_ scope: String, _ metric: String, _ value: String) {
            lines.append([scope, metric, value].map(Self.cell).joined(separator: ","))
        }
        func add(_ scope: String, _ metric: String, _ value: Int64) { add(scope, metric, String(value)) }
        func add(_ scope: String, _ metric: String, rate: Double) { add(scope, metric, String(format: "%.4f", rate)) }

        add("push", "id", status.id)
        add("push", "state", status.state.rawValue)
        add("push", "push_type", status.pushType)
        add("push", "priority_class", status.priorityClass.rawValue)
        for (name, date) in [
            ("created_at", status.createdAt), ("scheduled_at", status.scheduledAt),
            ("fanout_started_at", status.fanoutStartedAt), ("fanout_finished_at", status.fanoutFinishedAt),
            ("completed_at", status.completedAt), ("canceled_at", status.canceledAt),
        ] {
            if let date { add("push", name, date.formatted(.iso8601)) }
        }
        let counters = status.counters
        for (name, value) in [
            ("targeted", counters.targeted), ("accepted", counters.accepted),
            ("delivered_online", counters.deliveredOnline), ("rejected", counters.rejected),
            ("expired", counters.expired), ("canceled", counters.canceled), ("skipped", counters.skipped),
            ("tokens_invalidated", counters.tokensInvalidated),
        ] {
            add("counters", name, value)
        }
        for (reason, count) in counters.rejectedByReason.additionalProperties.sorted(by: { $0.key < $1.key }) {
            add("rejected_by_reason", reason, count)
        }
        for (reason, count) in counters.skippedByReason.additionalProperties.sorted(by: { $0.key < $1.key }) {
            add("skipped_by_reason", reason, count)
        }
        if let engagement = status.engagement {
            addEngagement(engagement, scope: "engagement", count: add, rate: { add($0, $1, rate: $2) })
        }
        if let holdout = status.holdout { add("ab_test", "holdout", rate: holdout) }
        if let sample = status.sample { add("ab_test", "sample", rate: sample) }
        if let phase = status.abPhase { add("ab_test", "phase", phase.rawValue) }
        if let winner = status.winner { add("ab_test", "winner", winner) }
        for variant in status.variants ?? [] {
            let scope = "variant \(variant.name)"
            add(scope, "weight", Int64(variant.weight))
            let counters = variant.counters
            for (name, value) in [
                ("targeted", counters.targeted), ("accepted", counters.accepted),
                ("delivered_online", counters.deliveredOnline), ("rejected", counters.rejected),
                ("expired", counters.expired), ("canceled", counters.canceled), ("skipped", counters.skipped),
            ] {
                add(scope, name, value)
            }
            addEngagement(variant.engagement, scope: scope, count: add, rate: { add($0, $1, rate: $2) })
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private func addEngagement(
        _ engagement: Components.Schemas.Engagement, scope: String,
        count: (String, String, Int64) -> Void, rate: (String, String, Double) -> Void
    ) {
        for (name, value) in [
            ("reached", engagement.reached), ("received", engagement.received), ("opened", engagement.opened),
            ("dismissed", engagement.dismissed),
        ] {
            count(scope, name, value)
        }
        rate(scope, "received_rate", engagement.receivedRate)
        rate(scope, "open_rate", engagement.openRate)
        for (action, value) in engagement.actions.additionalProperties.sorted(by: { $0.key < $1.key }) {
            count(scope, "action \(action)", value)
        }
    }

    /// A CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break. A cell a
    /// spreadsheet would read as a formula (`=`, `+`, `-`, `@` first, and not a number) gets an
    /// apostrophe in front, so that no name a phone or a caller chose runs as one.
    static func cell(_ text: String) -> String {
        var value = text
        if let first = value.first, "=+-@".contains(first), Double(value) == nil { value = "'" + value }
        guard value.contains(where: { ",\"\n\r".contains($0) }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
