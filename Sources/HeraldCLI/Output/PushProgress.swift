import Foundation
import HeraldAPIContract
import HeraldTiming
import OpenAPIRuntime

/// How a push's progress reads on a terminal: a line with a bar, done of total, failures by
/// reason, rate and ETA; and the summary an operator checks (the counters add up). Pure: the
/// CLI's tests render fixed statuses.
package enum PushProgress {
    package struct Counters: Equatable {
        package var targeted: Int64 = 0, accepted: Int64 = 0, rejected: Int64 = 0, expired: Int64 = 0,
            canceled: Int64 = 0
        package var skipped: Int64 = 0
        /// Acknowledged over the device's long connection (herald-gateway), not sent through APNs.
        package var deliveredOnline: Int64 = 0
        package var invalidated: Int64 = 0
        package var byReason: [String: Int64] = [:]
        package var skippedByReason: [String: Int64] = [:]
        package var done: Int64 { accepted + deliveredOnline + rejected + expired + canceled + skipped }

        package init(_ counters: Components.Schemas.Counters) {
            targeted = counters.targeted
            accepted = counters.accepted
            deliveredOnline = counters.deliveredOnline
            rejected = counters.rejected
            expired = counters.expired
            canceled = counters.canceled
            invalidated = counters.tokensInvalidated
            byReason = counters.rejectedByReason.additionalProperties
            skipped = counters.skipped
            skippedByReason = counters.skippedByReason.additionalProperties
        }
    }

    /// Whether the push is over for the person watching: completed, or canceled with every
    /// target accounted.
    package static func isSettled(_ status: Components.Schemas.PushStatus) -> Bool {
        let counters = Counters(status.counters)
        return status.state == .completed || (status.state == .canceled && counters.done >= counters.targeted)
    }

    /// One line: state, a bar, done of total, accepted, failed by reason, rate, ETA.
    package static func line(_ status: Components.Schemas.PushStatus, rate: Double) -> String {
        let counters = Counters(status.counters)
        let total = max(status.audienceSize ?? counters.targeted, counters.targeted)
        let fraction =
            total > 0 ? min(Double(counters.done) / Double(total), 1) : (status.state == .completed ? 1 : 0)
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let state = status.state.rawValue + (status.paused ? " (paused)" : "")
        var text =
            "\(state.padding(toLength: 11, withPad: " ", startingAt: 0)) ▕\(bar)▏ \(String(format: "%3.0f", fraction * 100))%  "
            + "\(Output.count(counters.done))/\(Output.count(total))  accepted \(Output.count(counters.accepted))"
        let failed = counters.rejected + counters.expired
        if failed > 0 { text += "  failed \(Output.count(failed))" + reasons(counters) }
        if counters.canceled > 0 { text += "  canceled \(Output.count(counters.canceled))" }
        if rate > 0 { text += "  \(Output.count(Int(rate)))/s" }
        if status.state != .completed, status.state != .canceled {
            if rate > 0, total > counters.done {
                text += "  ETA \(Int((Double(total - counters.done) / rate).rounded(.up)))s"
            } else if let eta = status.eta {
                text += "  ETA \(Output.time(eta))"
            }
            if let waves = status.waves, let next = waves.first(where: { !$0.started }) {
                let started = waves.filter(\.started).count
                text += "  wave \(started)/\(waves.count), next \(Output.time(next.sendAt))"
            }
        }
        return text
    }

    /// A wave of a push at a local time: `2026-12-01T08:00:00Z  2 time zones  1,204 devices  (Europe/Berlin, …)`.
    package static func waveLine(_ wave: Components.Schemas.PushWave) -> String {
        let names = wave.timeZones.map { $0.isEmpty ? "no time zone" : $0 }
        let shown = names.prefix(4).joined(separator: ", ") + (names.count > 4 ? ", …" : "")
        return "\(Output.time(wave.sendAt))  \(Output.count(Int64(wave.devices))) devices  (\(shown))"
            + (wave.started ? "  started" : "")
    }

    /// Failures by reason, most first, and the expired: ` (Unregistered 1,960, expired 3)`.
    package static func reasons(_ counters: Counters) -> String {
        var parts = counters.byReason.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
            .map { "\($0.key) \(Output.count($0.value))" }
        if counters.expired > 0 { parts.append("expired \(Output.count(counters.expired))") }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }

    /// ` (A 3, B 2)`: counts by reason, by name; empty for none.
    package static func byReason(_ counts: [String: Int64]) -> String {
        guard !counts.isEmpty else { return "" }
        return " ("
            + counts.sorted { $0.key < $1.key }.map { "\($0.key) \(Output.count($0.value))" }
            .joined(separator: ", ") + ")"
    }

    /// The summary an operator checks: targeted = accepted (+ online) + rejected (by reason) +
    /// expired + canceled (+ skipped).
    package static func summary(_ status: Components.Schemas.PushStatus) -> String {
        let counters = Counters(status.counters)
        var text =
            "push \(status.id): \(status.state.rawValue)\(status.paused ? " (paused)" : "")\n"
            + "  targeted \(Output.count(counters.targeted)) = accepted \(Output.count(counters.accepted))"
            + (counters.deliveredOnline > 0 ? " + online \(Output.count(counters.deliveredOnline))" : "")
            + " + rejected \(Output.count(counters.rejected))"
        text += byReason(counters.byReason)
        text += " + expired \(Output.count(counters.expired)) + canceled \(Output.count(counters.canceled))"
        if counters.skipped > 0 || !counters.skippedByReason.isEmpty {
            text += " + skipped \(Output.count(counters.skipped))" + byReason(counters.skippedByReason)
        }
        if status.state == .completed || status.state == .canceled {
            text += addsUp(status) ? "  ✔ adds up" : "  ✘ does NOT add up (\(Output.count(counters.done)) accounted)"
        }
        if counters.invalidated > 0 { text += "\n  tokens invalidated \(Output.count(counters.invalidated))" }
        if let engagement = status.engagement { text += "\n  " + engagementLine(engagement) }
        text += abTestLines(status)
        if let notification = status.notification { text += "\n  notification " + notificationText(notification) }
        text += "\n  class \(status.priorityClass.rawValue)"
        if let local = status.localTime {
            text += "\n  local time \(local.time)\(local.date.map { " on \($0)" } ?? "") in each device's time zone"
        }
        if status.quietHours == .hold { text += "\n  quiet hours held" }
        for wave in status.waves ?? [] { text += "\n  wave \(waveLine(wave))" }
        if let collapseID = status.collapseId { text += "\n  collapse id \(collapseID)" }
        let times: [(String, Date?)] = [
            ("created at", status.createdAt), ("scheduled at", status.scheduledAt),
            ("fanout started at", status.fanoutStartedAt), ("fanout finished at", status.fanoutFinishedAt),
            ("completed at", status.completedAt), ("canceled at", status.canceledAt),
        ]
        for (name, time) in times where time != nil { text += "\n  \(name) \(Output.time(time))" }
        return text
    }

    /// What the devices reported: `engagement  of 2,000 reached: received 1,800 (90.0%), opened 412
    /// (20.6%), dismissed 95, actions (reply 12)`.
    package static func engagementLine(_ engagement: Components.Schemas.Engagement) -> String {
        "engagement  of \(Output.count(engagement.reached)) reached: received \(Output.count(engagement.received))"
            + " (\(percent(engagement.receivedRate))), opened \(Output.count(engagement.opened))"
            + " (\(percent(engagement.openRate))), dismissed \(Output.count(engagement.dismissed))"
            + (engagement.actions.additionalProperties.isEmpty
                ? "" : ", actions" + byReason(engagement.actions.additionalProperties))
    }

    /// An A/B test's lines: its phase and winner, then each variant's share of the counters and
    /// open rate, and the holdout:
    /// `variant short (weight 3)  targeted 1,350 = accepted 1,340 + rejected 10  opened 201 (15.0%)`.
    package static func abTestLines(_ status: Components.Schemas.PushStatus) -> String {
        var text = ""
        if let sample = status.sample {
            text += "\n  A/B test, winner mode: sample \(percent(sample)) of the audience"
            switch status.abPhase {
            case .sample: text += ", sending the sample"
            case .waiting: text += ", the winner is picked at \(Output.time(status.scheduledAt))"
            case .rest: text += ", the winner goes to the rest"
            case nil: break
            }
            if let winner = status.winner { text += "; winner \(winner)" }
        }
        for variant in status.variants ?? [] {
            let counters = variant.counters
            text +=
                "\n  variant \(variant.name) (weight \(variant.weight))  targeted \(Output.count(counters.targeted))"
                + " = accepted \(Output.count(counters.accepted))"
                + (counters.deliveredOnline > 0 ? " + online \(Output.count(counters.deliveredOnline))" : "")
                + " + rejected \(Output.count(counters.rejected))"
                + (counters.expired > 0 ? " + expired \(Output.count(counters.expired))" : "")
                + (counters.canceled > 0 ? " + canceled \(Output.count(counters.canceled))" : "")
                + (counters.skipped > 0 ? " + skipped \(Output.count(counters.skipped))" : "")
                + "  opened \(Output.count(variant.engagement.opened)) (\(percent(variant.engagement.openRate)))"
                + (variant.name == status.winner ? "  ← winner" : "")
        }
        if let holdout = status.holdout, holdout > 0 {
            let held = status.counters.skippedByReason.additionalProperties["holdout"] ?? 0
            text += "\n  holdout \(percent(holdout)): \(Output.count(held)) devices, never sent"
        }
        return text
    }

    /// What the push said, as compact JSON with sorted keys, cut at 240 characters.
    package static func notificationText(_ notification: OpenAPIObjectContainer) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(notification) else { return "(unreadable)" }
        let text = String(decoding: data, as: UTF8.self)
        return text.count > 240 ? String(text.prefix(239)) + "…" : text
    }

    /// `20.6%`.
    package static func percent(_ share: Double) -> String { String(format: "%.1f%%", share * 100) }

    /// A push in a list: id, state, created, done of targeted.
    package static func listLine(_ status: Components.Schemas.PushStatus) -> String {
        let counters = Counters(status.counters)
        return "\(status.id)  \(status.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0))  "
            + "\(Output.time(status.createdAt))  \(Output.count(counters.done))/\(Output.count(counters.targeted))"
    }

    package static func addsUp(_ status: Components.Schemas.PushStatus) -> Bool {
        let counters = Counters(status.counters)
        return counters.targeted == counters.done
    }

    /// Notifications a second over the last few seconds of `samples` (time, done).
    package static func rate(_ samples: [(time: ContinuousClock.Instant, done: Int64)]) -> Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        let elapsed = last.time - first.time
        return Double(last.done - first.done) / max(elapsed.fractionalSeconds, 0.001)
    }
}
