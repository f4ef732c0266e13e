// herald-kafka-dev: the development Kafka broker (librdkafka's mock cluster) with Herald's
// topics created up front, on a fixed address. For development, tests and benchmarks only.
import CKafkaDevBind
import Foundation
import HeraldCore
import HeraldKafka
import Logging
import ServiceLifecycle

ServiceProcess.answerCommandLine(
    "herald-kafka-dev",
    about:
        "the development Kafka broker (librdkafka's mock cluster, in memory) with Herald's topics, on 127.0.0.1:HERALD_KAFKA_DEV_PORT (9092). For development, tests and benchmarks only."
)

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .info
    return handler
}
let logger = Logger(label: "herald-kafka-dev")

let reader = try await HeraldConfiguration.makeReader()
let settings = DevelopmentBrokerSettings(reader: reader)

herald_dev_bind_set_base_port(Int32(settings.port))
let cluster: KafkaDevelopmentCluster
do {
    cluster = try KafkaDevelopmentCluster(brokers: settings.brokers, logger: logger)
} catch {
    logger.critical("could not start the development broker: \(error)")
    exit(1)
}
if settings.port > 0 && herald_dev_bind_rewritten_count() != Int32(settings.brokers) {
    logger.critical(
        """
        the development broker did not get its ports \(settings.port)...\(settings.port + settings.brokers - 1) \
        (\(herald_dev_bind_rewritten_count()) of \(settings.brokers) bound): is another broker running? \
        Stop it or set HERALD_KAFKA_DEV_PORT (0 picks free ports)
        """)
    cluster.shutdown()
    exit(1)
}

var created: [String] = []
var madeByClients: [String] = []
for (name, partitions) in HeraldTopic.allCases.map({ ($0.name, settings.partitions[$0] ?? $0.defaultPartitions) })
    + settings.extraTopics.map({ ($0.name, $0.partitions) })
{
    if try cluster.createTopic(name, partitions: partitions) {
        created.append("\(name):\(partitions)")
    } else {
        madeByClients.append(name)
    }
}
if !madeByClients.isEmpty {
    // Clients that reconnected the moment the broker came back asked for these first.
    logger.warning(
        "topics made by clients before the broker could make them, with the development broker's default of 4 partitions",
        metadata: ["topics": "\(madeByClients.joined(separator: ","))"])
}

let bootstrap = cluster.bootstrapServers
if let file = settings.bootstrapFile {
    // Written whole, then renamed: a reader never sees half an address.
    let temporary = file + ".tmp"
    try Data((bootstrap + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
    _ = rename(temporary, file)
}
logger.info(
    "development broker ready", metadata: ["bootstrap": "\(bootstrap)", "topics": "\(created.joined(separator: ","))"])
print("HERALD_KAFKA_BROKERS=\(bootstrap)")
fflush(nil)

/// Keeps the cluster up until SIGTERM or SIGINT, then stops it.
struct DevelopmentBrokerService: Service {
    let cluster: KafkaDevelopmentCluster
    let bootstrapFile: String?

    func run() async throws {
        try? await gracefulShutdown()
        cluster.shutdown()
        if let bootstrapFile { unlink(bootstrapFile) }
    }
}

let group = ServiceGroup(
    services: [DevelopmentBrokerService(cluster: cluster, bootstrapFile: settings.bootstrapFile)],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger
)
try await group.run()
logger.info("development broker stopped")
