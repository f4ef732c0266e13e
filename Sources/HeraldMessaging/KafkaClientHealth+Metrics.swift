import HeraldKafka
import HeraldMetrics

extension KafkaClientHealth {
    /// librdkafka's statistics of a process's Kafka clients as Prometheus families: queue depth,
    /// each broker's connection and round trip, and for consumers the lag of each partition they
    /// own. Labels are bounded: the client's role in the process, the broker's node id, topic and
    /// partition. Clients without statistics yet are left out.
    /// Also the process's count of dead letters (``DeadLetterCount``), from 0 at start so that an
    /// alert sees the first one.
    public static func prometheusText(_ clients: [(client: String, health: KafkaClientHealth)]) -> String {
        var text = PrometheusText()
        text.single(
            "herald_dead_letters_total", .counter,
            help:
                "Records this process sent to herald.deadletter (it could not use them; see the dead-letter runbook).",
            value: DeadLetterCount.value)
        let reporting = clients.compactMap { client in client.health.statistics.map { (client.client, $0) } }
        guard !reporting.isEmpty else { return text.text }
        text.family(
            "herald_kafka_queued_messages", .gauge,
            help: "Records and requests waiting in librdkafka's queues (msg_cnt), per client.")
        for (client, statistics) in reporting {
            text.sample("herald_kafka_queued_messages", ["client": client], value: statistics.queuedMessages)
        }
        text.family("herald_kafka_broker_up", .gauge, help: "1 when the client's connection to the broker is up.")
        for (client, statistics) in reporting {
            for broker in statistics.brokers {
                text.sample(
                    "herald_kafka_broker_up", ["client": client, "broker": "\(broker.nodeID)"],
                    value: broker.isUp ? 1 : 0)
            }
        }
        text.family(
            "herald_kafka_broker_round_trip_seconds", .gauge,
            help: "Average round trip of the client's requests to the broker over librdkafka's last interval.")
        for (client, statistics) in reporting {
            for broker in statistics.brokers {
                guard let roundTrip = broker.averageRoundTrip else { continue }
                text.sample(
                    "herald_kafka_broker_round_trip_seconds", ["client": client, "broker": "\(broker.nodeID)"],
                    value: roundTrip)
            }
        }
        let lags = reporting.flatMap { client, statistics in
            statistics.consumerLag.map { (client, $0.key, $0.value) }
        }
        if !lags.isEmpty {
            text.family(
                "herald_kafka_consumer_lag", .gauge,
                help: "Records between the consumer's committed offset and the partition's end, per owned partition.")
            for (client, partition, lag) in lags.sorted(by: {
                ($0.0, $0.1.topic, $0.1.partition) < ($1.0, $1.1.topic, $1.1.partition)
            }) {
                text.sample(
                    "herald_kafka_consumer_lag",
                    ["client": client, "topic": partition.topic, "partition": "\(partition.partition)"], value: lag)
            }
        }
        return text.text
    }
}
