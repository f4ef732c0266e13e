import ArgumentParser
import Foundation
import HeraldCLI
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldRecords

/// `herald kafka dead-letters`: read `herald.deadletter` and replay what an operator chooses.
struct KafkaDeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "Read herald.deadletter, and put chosen letters back on their original topics.",
        subcommands: [List.self, Replay.self]
    )

    /// Which letters: the options `list` and `replay` share.
    struct Selection: ParsableArguments {
        @Option(help: "Only letters whose reason contains this text (case-insensitive).") var reasonContains: String?
        @Option(help: "Only letters from this consumer (herald-center, herald-sender).") var consumer: String?
        @Option(help: "Only letters at this offset of herald.deadletter or later.") var fromOffset: Int64?
        @Option(help: "Only letters at this offset or earlier.") var toOffset: Int64?
        @Option(help: "Stop reading after this many seconds without a record.") var idleSeconds: Int = 3

        var filter: DeadLetterFilter {
            DeadLetterFilter(
                reasonContains: reasonContains, consumer: consumer, fromOffset: fromOffset, toOffset: toOffset)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One JSON line per letter (where it came from, why, when), then a count per reason.",
            discussion: "Reads with a consumer group of its own: nobody else's position moves."
        )

        @OptionGroup var selection: Selection

        func run() async throws {
            let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.kafka.dead-letters")
            let entries = try await DeadLetterArchive.read(
                settings: configuration.kafka, idle: .seconds(selection.idleSeconds), logger: logger)
            var reasons: [String: Int] = [:]
            var unreadable = 0
            for entry in entries {
                guard let letter = entry.letter else {
                    unreadable += 1
                    CommandSupport.printJSON([
                        "partition": entry.partition, "offset": entry.offset,
                        "unreadable": entry.unreadable ?? "",
                    ])
                    continue
                }
                guard selection.filter.matches(entry) else { continue }
                reasons[letter.reason, default: 0] += 1
                CommandSupport.printJSON(KafkaDeadLettersCommand.describe(entry, letter))
            }
            CommandSupport.printJSON([
                "letters": reasons.values.reduce(0, +), "by_reason": reasons, "unreadable": unreadable,
                "read": entries.count,
            ])
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Produce the chosen letters' original records to their original topics.",
            discussion: """
                Fix the cause first: a letter is a record a consumer refused. Herald's consumers \
                are idempotent, so a letter replayed twice is counted once; one that fails again \
                comes back as a new letter. Without a selection option it refuses (replaying \
                everything is rarely meant): pass --all for that.
                """
        )

        @OptionGroup var selection: Selection
        @Flag(help: "Print what would be replayed, produce nothing.") var dryRun = false
        @Flag(help: "Replay every letter (no selection).") var all = false

        func run() async throws {
            let filter = selection.filter
            guard all || filter != DeadLetterFilter() else {
                throw CLIError(
                    "say which letters: --reason-contains, --consumer, --from-offset/--to-offset, or --all",
                    status: .usage)
            }
            let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.kafka.dead-letters")
            let chosen = try await DeadLetterArchive.read(
                settings: configuration.kafka, idle: .seconds(selection.idleSeconds), logger: logger
            ).filter(filter.matches)
            for entry in chosen {
                if let letter = entry.letter {
                    CommandSupport.printJSON(KafkaDeadLettersCommand.describe(entry, letter))
                }
            }
            guard !dryRun else {
                CommandSupport.printJSON(["would_replay": chosen.count])
                return
            }
            let producer = try KafkaProducer(
                configuration: configuration.kafka.producerConfiguration(clientID: "cli-replay"), logger: logger)
            do {
                let replayed = try await DeadLetterArchive.replay(chosen, producer: producer)
                await producer.shutdown()
                CommandSupport.printJSON(["replayed": replayed])
            } catch {
                await producer.shutdown()
                throw error
            }
        }
    }

    static func describe(_ entry: DeadLetterEntry, _ letter: Herald_V1_DeadLetter) -> [String: Any] {
        [
            "offset": entry.offset, "partition": entry.partition, "original_topic": letter.originalTopic,
            "original_partition": letter.originalPartition, "original_offset": letter.originalOffset,
            "key_hex": letter.originalKey.map { String(format: "%02x", $0) }.joined(),
            "value_bytes": letter.originalValue.count, "reason": letter.reason, "consumer": letter.consumer,
            "failed_at": ISO8601DateFormatter().string(
                from: Date(timeIntervalSince1970: Double(letter.failedAtMs) / 1000)),
        ]
    }
}
