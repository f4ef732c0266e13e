/// A record to produce.
public struct KafkaProducerMessage: Sendable {
    /// The topic to write to.
    public var topic: String
    /// The record key; records with one key go to one partition, in order.
    public var key: [UInt8]?
    /// The record value.
    public var value: [UInt8]
    /// A fixed partition, or `nil` to let the key choose.
    public var partition: Int32?
    /// Record headers (at most 8): trace context and the like, never the record's meaning.
    public var headers: [KafkaHeader]

    public init(
        topic: String, key: [UInt8]? = nil, value: [UInt8], partition: Int32? = nil, headers: [KafkaHeader] = []
    ) {
        self.topic = topic
        self.key = key
        self.value = value
        self.partition = partition
        self.headers = headers
    }
}

/// Where the broker stored an acknowledged record.
public struct KafkaDeliveryReport: Sendable, Equatable {
    public var partition: Int32
    public var offset: Int64
}

/// One Kafka record header: a name and bytes.
public struct KafkaHeader: Sendable, Equatable {
    public var name: String
    public var value: [UInt8]

    public init(name: String, value: [UInt8]) {
        self.name = name
        self.value = value
    }
}
