import Foundation
import HTTPTypes
import HeraldAPIContract
import Hummingbird

/// The statistics page: the Open API's getStatistics with a timeline, drawn as a bar chart.
extension ConsoleRoutes {
    struct StatsPage {
        struct Bar {
            var x: String
            var barWidth: String
            var acceptedY: String
            var acceptedHeight: String
            var failedY: String
            var failedHeight: String
            var canceledY: String
            var canceledHeight: String
            var title: String
        }

        struct Label {
            var x: String
            var text: String
        }

        /// A bucket's open rate on the line chart.
        struct RatePoint {
            var x: String
            var y: String
            var title: String
        }

        struct Environment {
            var name: String
            var count: String
        }

        var chrome: Chrome
        var ranges: [Choice]
        var unit: String
        var pushes: String
        var targeted: String
        var accepted: String
        var failed: String
        var width: Int
        var top: String
        var bars: [Bar]
        var labels: [Label]
        var summary: String
        /// Opens over the period: their count, their share of the devices reached, the line.
        var opened: String
        var openRate: String
        var ratePoints: [RatePoint]
        var rateLine: String
        var rateTop: String
        var rateSummary: String
        var devicesActive: String
        var devicesInvalid: String
        var environments: [Environment]
    }

    /// The periods the page offers: (name, label, length, hourly).
    static var statisticsRanges: [(String, String, TimeInterval, Bool)] {
        [
            ("24h", "Last 24 hours", 86_400, true), ("7d", "Last 7 days", 7 * 86_400, true),
            ("30d", "Last 30 days", 30 * 86_400, false), ("90d", "Last 90 days", 90 * 86_400, false),
        ]
    }

    func statsPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let chosen = request.uri.queryParameters.get("range") ?? "30d"
        let range = Self.statisticsRanges.first { $0.0 == chosen } ?? Self.statisticsRanges[2]
        let step: TimeInterval = range.3 ? 3600 : 86_400
        let now = Date()
        // Whole buckets: the window starts at the beginning of its first hour or day.
        let since = Date(
            timeIntervalSince1970: ((now.timeIntervalSince1970 - range.2) / step).rounded(.down) * step + step)
        let statistics: Components.Schemas.Statistics
        do {
            statistics = try await gateway.perform(
                "getStatistics", path: "/v1/stats", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await api.getStatistics(.init(query: .init(since: since, granularity: range.3 ? .hour : .day))).ok
                    .body.json
            }
        } catch {
            return Self.refusal(signedIn, error)
        }
        let buckets = Dictionary(
            (statistics.timeline ?? []).map { (Int64($0.start.timeIntervalSince1970), $0) },
            uniquingKeysWith: { a, _ in a })
        let count = Int((range.2 / step).rounded())
        let width = 760
        let slot = Double(width - 72) / Double(count)
        let largest = max(1, buckets.values.map(\.targeted).max() ?? 1)
        let scale = 166.0 / Double(largest)
        var bars: [StatsPage.Bar] = []
        var labels: [StatsPage.Label] = []
        // The open rate's axis runs to the highest bucket's rate, rounded up to 10 %.
        let rates = buckets.mapValues { bucket -> Double? in
            let reached = bucket.accepted + bucket.deliveredOnline
            return reached > 0 ? Double(bucket.opened ?? 0) / Double(reached) : nil
        }
        let rateTop = max(0.1, ((rates.values.compactMap { $0 }.max() ?? 0) * 10).rounded(.up) / 10)
        var ratePoints: [StatsPage.RatePoint] = []
        for index in 0..<count {
            let start = since.addingTimeInterval(Double(index) * step)
            let x = 68 + Double(index) * slot
            if index % max(1, count / 6) == 0 {
                let text = range.3 ? PushView.time(start).dropFirst(5).prefix(11) : PushView.time(start).prefix(10)
                labels.append(.init(x: String(format: "%.1f", x + slot / 2), text: String(text)))
            }
            guard let bucket = buckets[Int64(start.timeIntervalSince1970)] else { continue }
            if let rate = rates[Int64(start.timeIntervalSince1970)] ?? nil {
                ratePoints.append(
                    .init(
                        x: String(format: "%.1f", x + slot / 2), y: String(format: "%.1f", 190 - rate / rateTop * 166),
                        title:
                            "\(PushView.time(start)): \(PushView.number(bucket.opened ?? 0)) opened of \(PushView.number(bucket.accepted + bucket.deliveredOnline)) reached, \(String(format: "%.1f%%", rate * 100))"
                    ))
            }
            let accepted = Double(bucket.accepted) * scale
            let failed = Double(bucket.rejected + bucket.expired) * scale
            let canceled = Double(bucket.canceled) * scale
            bars.append(
                .init(
                    x: String(format: "%.1f", x), barWidth: String(format: "%.1f", max(1, slot * 0.8)),
                    acceptedY: String(format: "%.1f", 190 - accepted), acceptedHeight: String(format: "%.1f", accepted),
                    failedY: String(format: "%.1f", 190 - accepted - failed),
                    failedHeight: String(format: "%.1f", failed),
                    canceledY: String(format: "%.1f", 190 - accepted - failed - canceled),
                    canceledHeight: String(format: "%.1f", canceled),
                    title:
                        "\(PushView.time(start)): \(PushView.number(bucket.pushes)) pushes, \(PushView.number(bucket.targeted)) targeted, \(PushView.number(bucket.accepted)) accepted, \(PushView.number(bucket.rejected + bucket.expired)) failed, \(PushView.number(bucket.canceled)) canceled"
                ))
        }
        let delivery = statistics.delivery
        let opened = buckets.values.reduce(0) { $0 + ($1.opened ?? 0) }
        let reached = buckets.values.reduce(0) { $0 + $1.accepted + $1.deliveredOnline }
        let openRate = reached > 0 ? String(format: "%.1f%%", Double(opened) / Double(reached) * 100) : "–"
        let pushCount = statistics.pushes.additionalProperties.values.reduce(0, +)
        let page = StatsPage(
            chrome: signedIn.chrome("Statistics", section: .stats),
            ranges: Self.statisticsRanges.map { .init(value: $0.0, label: $0.1, selected: $0.0 == range.0) },
            unit: range.3 ? "hour" : "day", pushes: PushView.number(pushCount),
            targeted: PushView.number(delivery.targeted),
            accepted: PushView.number(delivery.accepted), failed: PushView.number(delivery.rejected + delivery.expired),
            width: width, top: PushView.number(largest), bars: bars, labels: labels,
            summary:
                "\(PushView.number(pushCount)) pushes, \(PushView.number(delivery.accepted)) of \(PushView.number(delivery.targeted)) devices accepted, per \(range.3 ? "hour" : "day")",
            opened: PushView.number(opened), openRate: openRate, ratePoints: ratePoints,
            rateLine: ratePoints.map { "\($0.x),\($0.y)" }.joined(separator: " "),
            rateTop: String(format: "%.0f%%", rateTop * 100),
            rateSummary:
                "Open rate per \(range.3 ? "hour" : "day"): \(PushView.number(opened)) opened of \(PushView.number(reached)) devices reached (\(openRate))",
            devicesActive: PushView.number(statistics.devices.active),
            devicesInvalid: PushView.number(statistics.devices.invalid),
            environments: statistics.devices.byEnvironment.additionalProperties.sorted { $0.key < $1.key }.map {
                .init(name: "Active, \($0.key)", count: PushView.number($0.value))
            })
        return Self.html(ConsoleTemplates.render("stats", page))
    }
}
