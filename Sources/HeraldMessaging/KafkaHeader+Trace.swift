import HeraldCore
import HeraldKafka

extension KafkaHeader {
    /// A `traceparent` header.
    public init(traceparent: String) {
        self.init(name: TraceContext.headerName, value: Array(traceparent.utf8))
    }

    /// A `traceparent` header continuing `trace` from a new span.
    public init(continuing trace: TraceContext) {
        self.init(traceparent: trace.child().traceparent)
    }
}

extension KafkaConsumerMessage {
    /// The trace context of the record's `traceparent` header, if it has a well-formed one.
    public var trace: TraceContext? {
        header(TraceContext.headerName).flatMap { TraceContext(traceparent: String(decoding: $0, as: UTF8.self)) }
    }
}
