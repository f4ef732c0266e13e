import HeraldCore
import HeraldMessaging
import HeraldMetrics
import Testing

@testable import HeraldKafka

/// How a Kafka client's health reads for `/readyz` and `/healthz`: librdkafka's statistics JSON
/// (the fields Herald reads, as librdkafka 2.0 writes them) turned into a pass or a failure that
/// says why. Pure: no broker.
@Suite("Kafka client health from librdkafka's statistics")
struct KafkaHealthTests {
    static func statistics(
        brokerState: String, lag: Int64 = 42, metadataAgeMilliseconds: Int = 1500,
        at instant: ContinuousClock.Instant = .now
    ) throws -> KafkaStatistics {
        let json = """
            {"name": "herald-sender#consumer-1", "type": "consumer", "msg_cnt": 3,
             "brokers": {
               "127.0.0.1:9092/bootstrap": {"name": "127.0.0.1:9092/bootstrap", "nodeid": -1, "state": "INIT"},
               "localhost:9092/1": {"name": "localhost:9092/1", "nodeid": 1, "state": "TRY_CONNECT"},
               "127.0.0.1:9092/1": {"name": "127.0.0.1:9092/1", "nodeid": 1, "state": "\(brokerState)",
                                    "waitresp_cnt": 1, "rtt": {"avg": 12500, "cnt": 4}}},
             "topics": {"herald.jobs": {"metadata_age": \(metadataAgeMilliseconds), "partitions": {
               "0": {"partition": 0, "consumer_lag": \(lag)},
               "1": {"partition": 1, "consumer_lag": -1},
               "-1": {"partition": -1, "consumer_lag": -1}}}}}
            """
        return try #require(Array(json.utf8).withUnsafeBytes { KafkaStatistics(json: $0, receivedAt: instant) })
    }

    @Test("the fields Herald reads: brokers without bootstrap entries, round trip in seconds, lag only where known")
    func parsing() throws {
        let statistics = try Self.statistics(brokerState: "UP")
        #expect(statistics.queuedMessages == 3)
        #expect(statistics.brokers.map(\.nodeID) == [1])
        #expect(statistics.brokers.first?.averageRoundTrip == 0.0125)
        #expect(statistics.consumerLag == [KafkaTopicPartition(topic: "herald.jobs", partition: 0): 42])
        #expect(statistics.topicMetadataAge["herald.jobs"] == 1.5)
        #expect(Array("not json".utf8).withUnsafeBytes { KafkaStatistics(json: $0) } == nil)
    }

    @Test(
        "brokers: ready with a broker up; not ready without statistics, with every broker down, or with an old report")
    func brokers() throws {
        let now = ContinuousClock.now
        let interval = Duration.seconds(5)
        var health = KafkaClientHealth(statistics: nil, fatalError: nil, lastPoll: nil, assignment: [])
        #expect(!health.brokersResult(now: now, statisticsInterval: interval).passed)
        health.statistics = try Self.statistics(brokerState: "UP", at: now)
        #expect(
            health.brokersResult(now: now, statisticsInterval: interval)
                == .pass("1 of 1 brokers connected, round trip 12 ms, metadata refreshed 1 s ago"))
        health.statistics = try Self.statistics(brokerState: "TRY_CONNECT", at: now)
        guard case .fail(let down) = health.brokersResult(now: now, statisticsInterval: interval) else {
            Issue.record("a cluster with no broker up is not ready")
            return
        }
        #expect(down.contains("1: TRY_CONNECT"))
        health.statistics = try Self.statistics(brokerState: "UP", at: now - .seconds(30))
        #expect(!health.brokersResult(now: now, statisticsInterval: interval).passed)
        // Metadata age is shown, not judged (an idle client's topics are not refreshed).
        health.statistics = try Self.statistics(brokerState: "UP", metadataAgeMilliseconds: 1_000_000, at: now)
        #expect(
            health.brokersResult(now: now, statisticsInterval: interval)
                == .pass("1 of 1 brokers connected, round trip 12 ms, metadata refreshed 1000 s ago"))
    }

    @Test("consumers: waiting for assignment is ready and says so; a poll too long ago is not ready")
    func consumers() throws {
        let now = ContinuousClock.now
        var health = KafkaClientHealth(
            statistics: try Self.statistics(brokerState: "UP", at: now), fatalError: nil, lastPoll: nil, assignment: [])
        #expect(
            health.consumerResult(now: now, statisticsInterval: .seconds(5), pollWithin: .seconds(60))
                == .fail("has not polled yet"))
        health.lastPoll = now - .seconds(1)
        guard
            case .pass(let waiting) = health.consumerResult(
                now: now, statisticsInterval: .seconds(5), pollWithin: .seconds(60))
        else {
            Issue.record("a member without partitions is ready")
            return
        }
        #expect(waiting.hasPrefix("waiting for assignment"))
        health.assignment = [KafkaTopicPartition(topic: "herald.jobs", partition: 0)]
        #expect(
            health.consumerResult(now: now, statisticsInterval: .seconds(5), pollWithin: .seconds(60)).passed)
        health.lastPoll = now - .seconds(90)
        guard
            case .fail(let stale) = health.consumerResult(
                now: now, statisticsInterval: .seconds(5), pollWithin: .seconds(60))
        else {
            Issue.record("a consumer that stopped polling is not ready")
            return
        }
        #expect(stale.contains("last polled 90 s ago"))
    }

    @Test("liveness fails only on librdkafka's fatal error")
    func liveness() {
        var health = KafkaClientHealth(statistics: nil, fatalError: nil, lastPoll: nil, assignment: [])
        #expect(health.fatalResult.passed)
        health.fatalError = "_FATAL: producer fenced"
        #expect(!health.fatalResult.passed)
    }

    @Test("a probe reports every check as JSON, fails when one fails, and fails a check that does not answer")
    func probe() async {
        let report = await HealthProbe(
            [
                HealthCheck("fine") { .pass("ok") },
                HealthCheck("hangs") {
                    try? await Task.sleep(for: .seconds(30))
                    return .pass("too late")
                },
            ], deadline: .milliseconds(200)
        ).run()
        #expect(!report.passed)
        #expect(report.results.map(\.name) == ["fine", "hangs"])
        #expect(
            report.json
                == #"{"checks":{"fine":{"detail":"ok","status":"pass"},"hangs":{"detail":"no answer within 0.2 seconds","status":"fail"}},"status":"failing"}"#
        )
    }

    @Test("librdkafka's statistics as metrics: bounded labels, seconds, lag only for owned partitions")
    func metrics() throws {
        let health = KafkaClientHealth(
            statistics: try Self.statistics(brokerState: "UP", lag: 7), fatalError: nil, lastPoll: nil, assignment: [])
        let idle = KafkaClientHealth(statistics: nil, fatalError: nil, lastPoll: nil, assignment: [])
        let text = KafkaClientHealth.prometheusText([("consumer_jobs", health), ("producer", idle)])
        #expect(text.contains(#"herald_kafka_queued_messages{client="consumer_jobs"} 3"#))
        #expect(text.contains(#"herald_kafka_broker_up{client="consumer_jobs",broker="1"} 1"#))
        #expect(text.contains(#"herald_kafka_broker_round_trip_seconds{client="consumer_jobs",broker="1"} 0.0125"#))
        #expect(
            text.contains(#"herald_kafka_consumer_lag{client="consumer_jobs",topic="herald.jobs",partition="0"} 7"#))
        #expect(!text.contains(#"partition="1""#), "a partition whose lag librdkafka does not know is left out")
        #expect(!text.contains(#"client="producer""#), "a client without statistics yet is left out")
        // Without statistics only the process's dead-letter count, from 0, so an alert sees the first.
        let idleText = KafkaClientHealth.prometheusText([("producer", idle)])
        #expect(!idleText.contains("herald_kafka_") && idleText.contains("\nherald_dead_letters_total "))
    }
}
