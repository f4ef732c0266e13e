import Foundation
import HeraldAPIContract

/// A push as the pushes list and the push page show it: counters as text, progress as a
/// percentage, outcomes as chart segments.
struct PushView {
    /// What each skip reason means to an operator.
    static let skipReasons = [
        "quiet_hours": "in their quiet hours (delivery policy)", "capped": "at the frequency cap (delivery policy)",
        "offline": "not connected (an in-app only push)",
        "not_authorized": "notifications turned off on the device (skip_unauthorized)",
    ]

    var id: String
    var shortID: String
    var stateLabel: String
    var stateClass: String
    var recall: Bool
    var recallOf: String?
    var pushType: String
    var priority: Int
    var priorityClass: String
    var collapseID: String?
    var createdAt: String
    var eta: String?
    var target: String
    var targeted: String
    var done: String
    var accepted: String
    var failed: String
    var canceled: String
    /// Done of targeted, 0 to 100, for an SVG width.
    var percent: String
    var percentWhole: Int
    /// Whether the push has ended (completed or canceled).
    var finished: Bool
    /// Whether the page follows it live.
    var live: Bool
    var segments: [Segment]
    var outcomeSummary: String
    /// Why devices were skipped (the app's delivery policy), when any were.
    var skippedDetail: String?
    var reasons: [Reason]
    // Stored, not computed: Mustache reads values through reflection, which sees stored
    // properties only.
    var hasReasons: Bool
    var reasonsHeight: Int
    var times: [Fact]
    /// A push at a local time, or holding quiet hours: its waves, once planned.
    var waves: [Wave]
    var hasWaves: Bool
    /// `09:00 on 2026-12-01 in each device's time zone`; nil for other pushes.
    var localTime: String?
    var holdsQuietHours: Bool
    /// What the devices reported back (docs/engagement.md).
    var engagement: Engagement?
    /// What the push said, as accepted: indented JSON.
    var notification: String?
    /// An A/B test's variants with their counts and open rates, its holdout, and in winner mode
    /// its phase (docs/engagement.md#ab-tests).
    var variants: [Variant]
    var hasVariants: Bool
    var holdout: Holdout?
    var abPhase: String?

    /// A variant's row.
    struct Variant {
        var name: String
        var weight: String
        var targeted: String
        var reached: String
        var notReached: String
        var opened: String
        var openRate: String
        var winner: Bool

        init(_ variant: Components.Schemas.VariantStatus, winner: String?) {
            let counters = variant.counters
            name = variant.name
            weight = String(variant.weight)
            targeted = PushView.number(counters.targeted)
            reached = PushView.number(variant.engagement.reached)
            notReached = PushView.number(counters.rejected + counters.expired + counters.canceled + counters.skipped)
            opened = PushView.number(variant.engagement.opened)
            openRate = String(format: "%.1f%%", variant.engagement.openRate * 100)
            self.winner = variant.name == winner
        }
    }

    struct Holdout {
        var share: String
        var devices: String
    }

    /// A push's engagement as its page shows it: counts, their share of the devices reached,
    /// and each action's count.
    struct Engagement {
        var reached: String
        var received: String
        var receivedRate: String
        var opened: String
        var openRate: String
        var dismissed: String
        var actions: [Fact]
        var hasActions: Bool

        init(_ engagement: Components.Schemas.Engagement) {
            reached = PushView.number(engagement.reached)
            received = PushView.number(engagement.received)
            receivedRate = String(format: "%.1f%%", engagement.receivedRate * 100)
            opened = PushView.number(engagement.opened)
            openRate = String(format: "%.1f%%", engagement.openRate * 100)
            dismissed = PushView.number(engagement.dismissed)
            actions = engagement.actions.additionalProperties.sorted {
                $0.value == $1.value ? $0.key < $1.key : $0.value > $1.value
            }.map { Fact(label: $0.key, value: PushView.number($0.value)) }
            hasActions = !actions.isEmpty
        }
    }

    /// A wave as the push page and the composer's dry run show it.
    struct Wave {
        var at: String
        var devices: String
        /// `Europe/Berlin, no time zone, … and 3 more`.
        var zones: String
        var started: Bool

        init(_ wave: Components.Schemas.PushWave) {
            let names = wave.timeZones.map { $0.isEmpty ? "no time zone" : $0 }
            at = PushView.time(wave.sendAt)
            devices = PushView.number(wave.devices)
            zones = names.prefix(6).joined(separator: ", ") + (names.count > 6 ? " and \(names.count - 6) more" : "")
            started = wave.started
        }
    }

    struct Segment {
        var name: String
        var label: String
        var count: String
        var x: String
        var width: String
    }

    struct Reason {
        var reason: String
        var count: String
        var barY: Int
        var textY: Int
        var barWidth: String
        var countX: String
    }

    struct Fact {
        var label: String
        var value: String
    }

    init(_ push: Components.Schemas.PushStatus) {
        let counters = push.counters
        id = push.id
        shortID = String(push.id.prefix(8))
        stateLabel = push.paused ? "paused" : push.state.rawValue.replacingOccurrences(of: "_", with: " ")
        stateClass = push.paused ? "paused" : push.state.rawValue
        recallOf = push.recallOf
        recall = push.recallOf != nil
        pushType = push.pushType
        priority = push.priority
        priorityClass = push.priorityClass.rawValue
        collapseID = push.collapseId
        createdAt = Self.time(push.createdAt)
        eta = push.eta.map(Self.time)
        let failedCount = counters.rejected + counters.expired
        let doneCount =
            counters.accepted + counters.deliveredOnline + failedCount + counters.canceled + counters.skipped
        let targetCount = max(push.audienceSize ?? counters.targeted, counters.targeted)
        finished = push.state == .completed || push.state == .canceled
        live = !finished
        let fraction: Double =
            targetCount > 0 ? min(1, Double(doneCount) / Double(targetCount)) : (push.state == .completed ? 1 : 0)
        percent = String(format: "%.2f", fraction * 100)
        percentWhole = Int((fraction * 100).rounded(.down))
        target = Self.number(targetCount)
        targeted = Self.number(counters.targeted)
        done = Self.number(doneCount)
        accepted = Self.number(counters.accepted)
        failed = Self.number(failedCount)
        canceled = Self.number(counters.canceled)
        let total = Double(max(targetCount, 1))
        var x = 0.0
        var segments: [Segment] = []
        for (name, label, count) in [
            ("accepted", "Accepted", counters.accepted), ("online", "Delivered online", counters.deliveredOnline),
            ("rejected", "Rejected", counters.rejected),
            ("expired", "Expired", counters.expired), ("canceled", "Canceled", counters.canceled),
            ("skipped", "Skipped", counters.skipped),
        ] {
            let width = Double(count) / total * 100
            segments.append(
                Segment(
                    name: name, label: label, count: Self.number(count), x: String(format: "%.3f", x),
                    width: String(format: "%.3f", width)))
            x += width
        }
        self.segments = segments
        outcomeSummary =
            "Accepted \(accepted), "
            + (counters.deliveredOnline > 0 ? "delivered online \(Self.number(counters.deliveredOnline)), " : "")
            + "rejected \(Self.number(counters.rejected)), expired \(Self.number(counters.expired)), canceled \(canceled)"
            + (counters.skipped > 0
                ? ", skipped \(Self.number(counters.skipped)) (\(counters.skippedByReason.additionalProperties.sorted { $0.key < $1.key }.map { "\($0.key) \(Self.number($0.value))" }.joined(separator: ", ")))"
                : "") + " of \(target)"
        skippedDetail =
            counters.skipped > 0
            ? "Skipped, never sent: "
                + counters.skippedByReason.additionalProperties.sorted { $0.key < $1.key }.map {
                    "\(Self.skipReasons[$0.key] ?? $0.key) \(Self.number($0.value))"
                }.joined(separator: ", ")
            : nil
        let byReason = counters.rejectedByReason.additionalProperties.sorted {
            $0.value == $1.value ? $0.key < $1.key : $0.value > $1.value
        }
        let largest = Double(byReason.first?.value ?? 1)
        reasons = byReason.enumerated().map { index, entry in
            let width = max(2, Double(entry.value) / largest * 320)
            return Reason(
                reason: entry.key, count: Self.number(entry.value), barY: index * 24 + 4, textY: index * 24 + 16,
                barWidth: String(format: "%.1f", width), countX: String(format: "%.1f", 208 + width))
        }
        hasReasons = !reasons.isEmpty
        reasonsHeight = reasons.count * 24 + 4
        var times = [Fact(label: "Created", value: createdAt)]
        for (label, date) in [
            ("Scheduled for", push.scheduledAt), ("Fan-out started", push.fanoutStartedAt),
            ("Fan-out finished", push.fanoutFinishedAt), ("Completed", push.completedAt),
            ("Canceled", push.canceledAt), ("Expires", push.expiresAt),
        ] {
            if let date { times.append(Fact(label: label, value: Self.time(date))) }
        }
        self.times = times
        waves = (push.waves ?? []).map(Wave.init)
        hasWaves = !waves.isEmpty
        localTime = push.localTime.map {
            "\($0.time)\($0.date.map { " on \($0)" } ?? ", the next time") in each device's time zone"
        }
        holdsQuietHours = push.quietHours == .hold
        engagement = push.engagement.map(Engagement.init)
        variants = (push.variants ?? []).map { Variant($0, winner: push.winner) }
        hasVariants = !variants.isEmpty
        holdout = push.holdout.flatMap { share in
            share > 0
                ? Holdout(
                    share: String(format: "%.0f%%", share * 100),
                    devices: PushView.number(push.counters.skippedByReason.additionalProperties["holdout"] ?? 0))
                : nil
        }
        if let sample = push.sample {
            let share = String(format: "%.0f%%", sample * 100)
            switch push.abPhase {
            case .sample: abPhase = "Winner mode: sending the variants to a sample of \(share)."
            case .waiting:
                abPhase =
                    "Winner mode: the sample (\(share)) is sent; the best open rate goes to the rest at \(push.scheduledAt.map(PushView.time) ?? "its time")."
            case .rest:
                abPhase =
                    "Winner mode: the sample (\(share)) got the variants; the rest gets the winner, \(push.winner ?? "")."
            case nil: abPhase = "Winner mode: a sample of \(share)."
            }
        }
        notification = push.notification.flatMap { notification in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode(notification)).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// `1,234,567`: digits grouped by threes (no formatter object: a page formats hundreds).
    static func number(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        grouped.reserveCapacity(digits.count + digits.count / 3 + 1)
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return value < 0 ? "-" + grouped : grouped
    }

    /// `2026-11-24 20:31:05 UTC`.
    static func time(_ date: Date) -> String {
        let text = date.formatted(.iso8601)
        return text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
    }
}

/// Which buttons a push's page offers, by its state (the operations still decide: an action
/// that became impossible meanwhile answers 409, shown on the page).
struct PushActions {
    var pause: Bool
    var resume: Bool
    var cancel: Bool
    var recall: Bool
    var correct: Bool
    /// Whether any button is offered (stored: Mustache sees stored properties only).
    var any: Bool

    init(_ push: Components.Schemas.PushStatus) {
        let ended = push.state == .completed || push.state == .canceled
        let isRecall = push.recallOf != nil
        pause = !ended && !push.paused && push.state != .sending && !isRecall
        resume = !ended && push.paused
        cancel = !ended
        recall = !isRecall && push.state != .scheduled
        correct = !isRecall
        any = pause || resume || cancel || recall || correct
    }
}
