/// A record received by a ``KafkaConsumer``.
public struct KafkaConsumerMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]

    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8]) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
    }
}
