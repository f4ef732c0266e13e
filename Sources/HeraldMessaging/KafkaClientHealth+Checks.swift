import HeraldCore
import HeraldKafka
import HeraldMetrics

extension KafkaClientHealth {

    /// Readiness of the connection to the brokers, from librdkafka's last statistics: at least
    /// one broker connected, and the report itself recent (librdkafka reports every
    /// `statisticsInterval`; three missed reports mean the client stopped serving its queue).
    public func brokersResult(now: ContinuousClock.Instant, statisticsInterval: Duration) -> HealthCheck.Result {
        guard let statistics else {
            return .fail(
                "no statistics from librdkafka yet (one comes every \(statisticsInterval.formattedSeconds)); the client has not connected"
            )
        }
        let age = now - statistics.receivedAt
        guard age <= statisticsInterval * 3 + .seconds(2) else {
            return .fail("librdkafka's last report is \(age.formattedSeconds) old; its client is not being served")
        }
        let up = statistics.brokers.filter(\.isUp)
        guard !up.isEmpty else {
            let states = statistics.brokers.map { "\($0.nodeID): \($0.state)" }.joined(separator: ", ")
            return .fail(
                "no broker connected (\(states.isEmpty ? "no broker known" : states)); check HERALD_KAFKA_BROKERS and the brokers"
            )
        }
        let roundTrips = up.compactMap(\.averageRoundTrip)
        let roundTrip = roundTrips.isEmpty ? "" : ", round trip \(Int((roundTrips.max() ?? 0) * 1000)) ms"
        // Shown, not judged: librdkafka refreshes only the topics a client uses, so an idle
        // client's metadata ages without anything being wrong; its brokers' connections are what
        // tells whether it can work.
        let metadata = statistics.topicMetadataAge.values.min().map { ", metadata refreshed \(Int($0)) s ago" } ?? ""
        return .pass("\(up.count) of \(statistics.brokers.count) brokers connected\(roundTrip)\(metadata)")
    }

    /// Readiness of a consumer: its brokers (``brokersResult(now:statisticsInterval:)``), a poll
    /// within `pollWithin` (a member that stops polling for `max.poll.interval.ms` is put out of
    /// its group), and its assignment — none is a pass, stated as "waiting for assignment".
    public func consumerResult(
        now: ContinuousClock.Instant, statisticsInterval: Duration, pollWithin: Duration
    ) -> HealthCheck.Result {
        let brokers = brokersResult(now: now, statisticsInterval: statisticsInterval)
        guard case .pass(let connected) = brokers else { return brokers }
        guard let lastPoll else { return .fail("has not polled yet") }
        let sincePoll = now - lastPoll
        guard sincePoll <= pollWithin else {
            return .fail(
                "last polled \(sincePoll.formattedSeconds) ago (more than \(pollWithin.formattedSeconds)): its handler is stuck or busy"
            )
        }
        let owned = assignment.isEmpty ? "waiting for assignment" : "\(assignment.count) partitions assigned"
        return .pass("\(owned); \(connected)")
    }

    /// Liveness: no fatal librdkafka error (after one, the client must be recreated: restart).
    public var fatalResult: HealthCheck.Result {
        if let fatalError { return .fail("librdkafka fatal error \(fatalError): restart the process") }
        return .pass("no fatal error")
    }
}

extension KafkaProducer {
    /// `/readyz`: the producer's brokers are connected.
    public func readinessCheck(_ name: String, statisticsInterval: Duration) -> HealthCheck {
        HealthCheck(name) { self.health.brokersResult(now: .now, statisticsInterval: statisticsInterval) }
    }

    /// `/healthz`: the producer has no fatal error.
    public func livenessCheck(_ name: String) -> HealthCheck {
        HealthCheck(name) { self.health.fatalResult }
    }
}

extension KafkaConsumer {
    /// `/readyz`: brokers connected, polled recently, assignment stated.
    public func readinessCheck(_ name: String, statisticsInterval: Duration, pollWithin: Duration) -> HealthCheck {
        HealthCheck(name) {
            self.health.consumerResult(now: .now, statisticsInterval: statisticsInterval, pollWithin: pollWithin)
        }
    }

    /// `/healthz`: the consumer has no fatal error.
    public func livenessCheck(_ name: String) -> HealthCheck {
        HealthCheck(name) { self.health.fatalResult }
    }
}

extension Duration {
    /// `2.5 s`.
    var formattedSeconds: String {
        let tenths = Int((Double(components.seconds) * 10 + Double(components.attoseconds) / 1e17).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
    }
}
