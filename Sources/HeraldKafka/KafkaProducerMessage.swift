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

    public init(topic: String, key: [UInt8]? = nil, value: [UInt8], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.partition = partition
    }
}

/// Where the broker stored an acknowledged record.
public struct KafkaDeliveryReport: Sendable, Equatable {
    public var partition: Int32
    public var offset: Int64
}
