/// A record received by a ``KafkaConsumer``.
public struct KafkaConsumerMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    /// The record's headers, in the order they were written.
    public var headers: [KafkaHeader]

    public init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = []
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
    }

    /// The value of the first header named `name`, if any.
    public func header(_ name: String) -> [UInt8]? {
        headers.first { $0.name == name }?.value
    }
}
