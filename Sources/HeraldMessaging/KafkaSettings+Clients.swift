import HeraldCore
import HeraldKafka
import HeraldMetrics

extension KafkaSettings {
    /// `/readyz` checks of a producer and of consumers made from these settings.
    public func readinessCheck(_ name: String, producer: KafkaProducer) -> HealthCheck {
        producer.readinessCheck(name, statisticsInterval: statisticsInterval)
    }

    public func readinessCheck(_ name: String, consumer: KafkaConsumer) -> HealthCheck {
        consumer.readinessCheck(name, statisticsInterval: statisticsInterval, pollWithin: readyPollWithin)
    }

    private var client: KafkaClientConfiguration {
        var extra = security.librdkafkaProperties
        if !debugContexts.isEmpty { extra["debug"] = extra["debug"] ?? debugContexts }
        var client = KafkaClientConfiguration(bootstrapServers: brokers, clientID: clientID, extraProperties: extra)
        client.statisticsInterval = statisticsInterval
        return client
    }

    /// Producer settings for these brokers; `suffix` tells this process's producers apart in
    /// the brokers' logs (`herald-center`, `herald-sender-outcomes`, …).
    public func producerConfiguration(clientID suffix: String) -> KafkaProducerConfiguration {
        var client = self.client
        client.clientID = "\(clientID)-\(suffix)"
        var configuration = KafkaProducerConfiguration(client: client)
        configuration.linger = linger
        configuration.compression = compression
        return configuration
    }

    /// Consumer settings for these brokers: a member of `groupID` on `topics`.
    public func consumerConfiguration(groupID: String, topics: [String], clientID suffix: String)
        -> KafkaConsumerConfiguration
    {
        var client = self.client
        client.clientID = "\(clientID)-\(suffix)"
        var configuration = KafkaConsumerConfiguration(client: client, groupID: groupID, topics: topics)
        configuration.sessionTimeout = sessionTimeout
        configuration.heartbeatInterval = heartbeatInterval
        configuration.fetchWaitMaximum = fetchWaitMaximum
        configuration.fetchQueueKilobytes = consumerQueueKilobytes
        return configuration
    }
}
