import Testing

/// All tests that talk to the development broker, one at a time: they share it, and the
/// group tests run several processes each.
@Suite(.serialized) enum KafkaTests {}
