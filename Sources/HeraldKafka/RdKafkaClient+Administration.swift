import CRdKafka

/// Topic administration through librdkafka's metadata and Admin API. Every call blocks for up to
/// its timeout: callers run them on a ``BlockingCallThread``.
extension RdKafkaClient {
    /// Every topic the brokers know, with its partition count and the replicas of its first
    /// partition. Blocking, up to `timeoutMilliseconds`.
    /// - Throws: ``KafkaError`` when no broker answered.
    func describeTopics(timeoutMilliseconds: Int32) throws(KafkaError) -> [KafkaTopicDescription] {
        let result: Result<[KafkaTopicDescription], KafkaError> = destroyedLock.withLock { destroyed in
            if destroyed { return .failure(KafkaError.shutDown) }
            // Filled by librdkafka on success; freed with rd_kafka_metadata_destroy before returning.
            var metadata: UnsafePointer<rd_kafka_metadata>?
            // all_topics = 1 lists what exists without asking brokers to create anything.
            let code = rd_kafka_metadata(handle, 1, nil, &metadata, timeoutMilliseconds)
            defer { if let metadata { rd_kafka_metadata_destroy(metadata) } }
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                return .failure(KafkaError(code: code, context: "the brokers did not list their topics"))
            }
            let topics = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
            return .success(
                topics.compactMap { topic -> KafkaTopicDescription? in
                    guard topic.err == RD_KAFKA_RESP_ERR_NO_ERROR, let name = topic.topic else { return nil }
                    let replicas = topic.partition_cnt > 0 ? Int(topic.partitions[0].replica_cnt) : 0
                    return KafkaTopicDescription(
                        name: String(cString: name), partitions: Int(topic.partition_cnt), replicas: replicas)
                })
        }
        return try result.get()
    }

    /// Asks the brokers to create `topics` (CreateTopics) and waits for their answer. Blocking, up
    /// to `timeoutMilliseconds` for the brokers plus the same for the request.
    /// - Returns: per topic, nil when it was created, or the broker's error (for example
    ///   `TOPIC_ALREADY_EXISTS`).
    /// - Throws: ``KafkaError`` when the request as a whole failed: no broker answered, or the
    ///   brokers do not support the Admin API.
    func createTopics(_ topics: [KafkaTopicSpecification], timeoutMilliseconds: Int32) throws(KafkaError)
        -> [String: KafkaError?]
    {
        let result: Result<[String: KafkaError?], KafkaError> = destroyedLock.withLock { destroyed in
            if destroyed { return .failure(KafkaError.shutDown) }
            var errorText = [CChar](repeating: 0, count: 512)
            // Each NewTopic is ours until rd_kafka_NewTopic_destroy_array below.
            var newTopics: [OpaquePointer?] = []
            defer { rd_kafka_NewTopic_destroy_array(&newTopics, newTopics.count) }
            for topic in topics {
                guard
                    let newTopic = rd_kafka_NewTopic_new(
                        topic.name, Int32(topic.partitions), Int32(topic.replicationFactor), &errorText,
                        errorText.count)
                else {
                    return .failure(
                        KafkaError(
                            kind: .configuration,
                            message: "librdkafka refused topic \(topic.name): \(Self.text(errorText))"))
                }
                newTopics.append(newTopic)
                for (name, value) in topic.configuration.sorted(by: { $0.key < $1.key }) {
                    let code = rd_kafka_NewTopic_set_config(newTopic, name, value)
                    if code != RD_KAFKA_RESP_ERR_NO_ERROR {
                        return .failure(KafkaError(code: code, context: "topic \(topic.name): \(name)=\(value)"))
                    }
                }
            }
            // Options and queue are ours until the defers; the event until rd_kafka_event_destroy.
            let options = rd_kafka_AdminOptions_new(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
            defer { rd_kafka_AdminOptions_destroy(options) }
            _ = rd_kafka_AdminOptions_set_operation_timeout(
                options, timeoutMilliseconds, &errorText, errorText.count)
            _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMilliseconds, &errorText, errorText.count)
            let queue = rd_kafka_queue_new(handle)
            defer { rd_kafka_queue_destroy(queue) }
            rd_kafka_CreateTopics(handle, &newTopics, newTopics.count, options, queue)
            guard let event = rd_kafka_queue_poll(queue, timeoutMilliseconds * 2 + 1000) else {
                return .failure(KafkaError(code: RD_KAFKA_RESP_ERR__TIMED_OUT, context: "CreateTopics"))
            }
            defer { rd_kafka_event_destroy(event) }
            let eventError = rd_kafka_event_error(event)
            if eventError != RD_KAFKA_RESP_ERR_NO_ERROR {
                let text = rd_kafka_event_error_string(event).map { String(cString: $0) } ?? ""
                var error = KafkaError(code: eventError, context: "CreateTopics")
                if !text.isEmpty { error.message = "CreateTopics: \(text)" }
                return .failure(error)
            }
            guard let created = rd_kafka_event_CreateTopics_result(event) else {
                return .failure(KafkaError(kind: .broker, message: "CreateTopics: librdkafka returned no result"))
            }
            var count = 0
            guard let results = rd_kafka_CreateTopics_result_topics(created, &count) else { return .success([:]) }
            var answers: [String: KafkaError?] = [:]
            for index in 0..<count {
                guard let topicResult = results[index] else { continue }
                let name = String(cString: rd_kafka_topic_result_name(topicResult))
                let code = rd_kafka_topic_result_error(topicResult)
                if code == RD_KAFKA_RESP_ERR_NO_ERROR {
                    answers[name] = .some(nil)
                } else {
                    var error = KafkaError(code: code, context: name)
                    if let text = rd_kafka_topic_result_error_string(topicResult) {
                        error.message = "\(name): \(String(cString: text))"
                    }
                    answers[name] = .some(error)
                }
            }
            return .success(answers)
        }
        return try result.get()
    }

    /// The NUL-terminated text librdkafka wrote into `buffer`.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
