import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldRecords
import StoreTestSupport
import Testing

@testable import HeraldCenter
@testable import HeraldStore

/// A templated push's fan-out (docs/templates.md): the audience reads each placeholder's value
/// beside the device — by the keyset pages and by the COPY stream alike, quotes and non-ASCII
/// text included — and the job record gives every device its own rendered payload.
@Suite("Personalization at fan-out")
struct PersonalizationTests {
    @Test func valuesAreReadBesideEachDeviceAndEveryDeviceGetsItsOwnPayload() async throws {
        try await withCenterEnvironment { env in
            let people: [(locale: String?, alias: String?, attributes: [String: JSONValue])] = [
                ("de_AT", "anna", ["first_name": .string("Anna"), "score": .number(7.5), "beta": .bool(true)]),
                ("de-DE", nil, ["first_name": .string("Jörg \"J\" o'Neil \\")]),
                ("fr", "zoe", [:]),
                (nil, nil, ["first_name": .string("")]),
            ]
            var ids: [Int64] = []
            for (number, person) in people.enumerated() {
                ids.append(
                    try await env.devices.register(
                        DeviceRegistration(
                            appID: env.app.id, token: CenterEnvironment.token(seed: 9, number: number),
                            environment: .production, topic: env.app.bundleID, alias: person.alias,
                            locale: person.locale, attributes: try DeviceAttributes.normalized(person.attributes))
                    ).id)
            }
            var base = APNsPayload(
                alert: .details(
                    .init(
                        title: "Hi {{first_name | default: \"there\"}}",
                        body: "{{alias | default: \"-\"}} {{score | default: \"0\"}} {{beta | default: \"no\"}}")))
            base.sound = .named("default")
            var german = base
            german.alert = .details(.init(title: "Hallo {{first_name | default: \"du\"}}", body: "{{language}}"))
            let stored = PayloadTemplate.storedJSON(default: base.encoded(), localized: [("de", german.encoded())])
            let push = Push(
                definition: NewPush(
                    id: UUID(), appID: env.app.id, audienceJSON: PushAudience.everyone.json, notificationJSON: "{}",
                    payload: base.encoded(), template: stored),
                fanoutCursor: 0, batchesEmitted: 0, createdAt: Date())
            let context = try FanoutContext(
                push: push, batchSize: 500, topics: JobTopics(campaign: "unused", transactional: "unused"))
            #expect(context.selection.personalization.first == .locale)
            let budget = try #require(context.cutter.renderBudget, "a templated push's batches are cut by bytes too")
            #expect(
                budget.bytes == 800_000 && budget.firstName == 1 && budget.limit == 4096
                    && budget.stamp == HeraldPayloadKey.reservedBytes,
                "up to 500 devices, while their renders, the herald key included, could not pass 800,000 bytes")

            let page = try await env.audience.page(context.selection, after: 0, limit: 100)
            var streamed = AudiencePage()
            for try await part in env.audience.stream(context.selection, after: 0, pageSize: 3) {
                for index in 0..<part.count { streamed.devices.append(index, of: part.devices) }
            }
            #expect(page.devices.deviceIDs == ids && streamed.devices == page.devices, "pages and COPY agree")

            let cut = BatchCutter.Cut(
                record: RecordedBatch(
                    pushID: push.id, sequence: 0, firstDevice: ids[0], lastDevice: ids[3], targetCount: 4,
                    environment: .production, topic: env.app.bundleID),
                targets: streamed.devices)
            let batch = try Herald_V1_JobBatch.decodeRecord(try context.factory.record(cut).value)
            let alerts = try batch.targets.map { target in
                let payload = batch.payloads[Int(target.payloadIndex)]
                let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any]
                #expect(
                    (object?["herald"] as? [String: String]) == ["push_id": push.id.uuidString.lowercased()],
                    "every render carries the push id")
                return (object?["aps"] as? [String: Any])?["alert"] as? [String: String] ?? [:]
            }
            #expect(
                alerts == [
                    ["title": "Hallo Anna", "body": "de"],
                    ["title": "Hallo Jörg \"J\" o'Neil \\", "body": "de"],
                    ["title": "Hi there", "body": "zoe 0 no"],
                    ["title": "Hi there", "body": "- 0 no"],
                ])
            #expect(batch.payloads.count == 4 && batch.payload.isEmpty)

            // The first device's values with the default variant: numbers and booleans as text.
            var defaultOnly = context.selection
            defaultOnly.personalization = try PayloadTemplate(
                stored: PayloadTemplate.storedJSON(default: base.encoded(), localized: [])
            ).personalization()
            let first = try await env.audience.page(defaultOnly, after: 0, limit: 1)
            #expect(
                (0..<first.devices.valuesPerDevice).map {
                    String(decoding: first.devices.value($0, at: 0), as: UTF8.self)
                }
                .sorted() == ["7.5", "Anna", "anna", "true"])
        }
    }
}
