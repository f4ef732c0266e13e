import ArgumentParser
import Foundation
import HeraldCLI
import HeraldCore
import HeraldKafka
import HeraldMessaging

/// `herald kafka create-topics`: creates Herald's five topics where they are missing, through
/// librdkafka's Admin API; safe to run at every deploy (a Kubernetes Job does).
struct KafkaCreateTopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-topics",
        abstract:
            "Create herald.pushes, herald.jobs, herald.jobs.transactional, herald.outcomes and herald.deadletter where missing.",
        discussion: """
            Partitions, replication factor and min.insync.replicas come from HERALD_KAFKA_TOPICS_* \
            (docs/configuration.md). A topic that exists is left as it is and reported, with a \
            warning when it has fewer partitions or replicas than the settings ask (adding \
            partitions moves keys: docs/operations.md, "Adding partitions"). Prints one JSON line \
            per topic; exits 1 when a topic is missing and could not be created.
            """
    )

    @Option(help: "Seconds to wait for the brokers' answers.") var timeoutSeconds: Int = 30

    func run() async throws {
        let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.kafka.topics")
        let settings = try KafkaTopicSettings(reader: try await HeraldConfiguration.makeReader())
        let administrator = try KafkaTopicAdministrator(
            configuration: configuration.kafka.producerConfiguration(clientID: "cli-topics").client, logger: logger)
        let timeout = Duration.seconds(timeoutSeconds)
        let reports: [KafkaTopicProvisioner.Report]
        do {
            reports = try await KafkaTopicProvisioner(administrator: administrator, timeout: timeout)
                .provision(KafkaTopicProvisioner.heraldTopics(settings))
            await administrator.shutdown()
        } catch {
            await administrator.shutdown()
            throw error
        }
        for report in reports {
            var line: [String: Any] = ["topic": report.topic, "state": report.state.rawValue]
            if let partitions = report.partitions { line["partitions"] = partitions }
            if let replicas = report.replicas { line["replicas"] = replicas }
            if let error = report.error { line["error"] = error }
            if !report.warnings.isEmpty { line["warning"] = report.warnings.joined(separator: "; ") }
            CommandSupport.printJSON(line)
        }
        let failed = reports.filter { $0.state == .failed }.map(\.topic)
        guard failed.isEmpty else {
            throw CLIError("could not create \(failed.joined(separator: ", ")); see the lines above")
        }
    }
}
