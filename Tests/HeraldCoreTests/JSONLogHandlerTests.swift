import Foundation
import HeraldCore
import Logging
import Synchronization
import Testing

@Suite("JSON log lines")
struct JSONLogHandlerTests {
    @Test("one JSON object a line: time, level, logger, message, source and nested metadata, everything escaped")
    func lines() throws {
        let lines = Mutex<[String]>([])
        var handler = JSONLogHandler(label: "herald.test") { line in lines.withLock { $0.append(line) } }
        handler.logLevel = .debug
        handler[metadataKey: "process"] = "a \"quoted\"\nvalue"
        let logger = Logger(label: "herald.test") { _ in handler }
        logger.info(
            "push accepted\twith a tab",
            metadata: [
                "push": "\(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)",
                "tags": ["a", "b\\c"], "nested": ["count": "\(3)"], "control": "\u{1}",
            ])
        logger.trace("not written below the level")
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        let line = try #require(written.first)
        #expect(line.hasSuffix("}\n") && line.dropLast().allSatisfy { $0 != "\n" }, "one line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "herald.test")
        #expect(object["message"] as? String == "push accepted\twith a tab")
        let time = try #require(object["time"] as? String)
        #expect(
            time.count == 24 && time.hasSuffix("Z")
                && ISO8601DateFormatter().date(
                    from: time.replacingOccurrences(
                        of: #"\.\d{3}Z"#, with: "Z", options: .regularExpression)) != nil
        )
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["process"] as? String == "a \"quoted\"\nvalue")
        #expect(metadata["push"] as? String == "00000000-0000-0000-0000-000000000001")
        #expect(metadata["tags"] as? [String] == ["a", "b\\c"])
        #expect((metadata["nested"] as? [String: Any])?["count"] as? String == "3")
        #expect(metadata["control"] as? String == "\u{1}")
    }

    @Test("an unknown format or level is refused with what it may be")
    func settings() async throws {
        let format = try await HeraldConfiguration.load(environment: ["HERALD_LOG_FORMAT": "yaml"])
        #expect { try format.bootstrapLogging() } throws: { "\($0)".contains("one of text, json") }
        let level = try await HeraldConfiguration.load(environment: ["HERALD_LOG_LEVEL": "loud"])
        #expect { try level.bootstrapLogging() } throws: { "\($0)".contains("HERALD_LOG_LEVEL is \"loud\"") }
    }
}
