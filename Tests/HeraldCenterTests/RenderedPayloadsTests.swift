import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldRecords
import Testing

@testable import HeraldCenter

/// A templated batch's payloads kept once each (RenderedPayloads), against a plain dictionary doing
/// the same: every target points at its own bytes, each distinct payload is kept once, in the order
/// first seen.
@Suite("Rendered payloads of a batch (pure logic)")
struct RenderedPayloadsTests {
    @Test(
        "repeats, the empty payload, lengths around the eight-byte steps and a table half full agree with a dictionary")
    func agreesWithADictionary() {
        var generator = SystemRandomNumberGenerator()
        // Lengths 0…40 cover every tail length; the first pool's few values make repeats common;
        // the second fills half the table's 1,024 slots with distinct payloads (long probe chains,
        // some wrapping past the table's end).
        let few: [[UInt8]] = (0..<180).map { index in
            (0..<(index % 41)).map { _ in UInt8.random(in: 0...3, using: &generator) }
        }
        let distinct: [[UInt8]] = (0..<512).map { index in Array("payload \(index)".utf8) }
        for payloads in [(0..<500).map { _ in few.randomElement(using: &generator)! }, distinct] {
            Self.check(payloads)
        }
    }

    static func check(_ payloads: [[UInt8]]) {
        var table = RenderedPayloads(targets: payloads.count)
        var known: [[UInt8]: UInt32] = [:]
        var expected: [[UInt8]] = []
        for payload in payloads {
            table.append(payload)
            if known[payload] == nil {
                known[payload] = UInt32(expected.count)
                expected.append(payload)
            }
        }
        #expect(table.distinct == expected)
        #expect(table.indexes == payloads.map { known[$0]! })
        #expect(table.indexes.count == payloads.count)
    }

    @Test("payloads that differ in one byte anywhere, or only in length, are kept apart")
    func nearMisses() {
        let base = Array(#"{"aps":{"alert":"Hi gold, DE"},"score":42}"#.utf8)
        var variants: [[UInt8]] = [base, base + [0], Array(base.dropLast())]
        for position in base.indices {
            var changed = base
            changed[position] ^= 1
            variants.append(changed)
        }
        var table = RenderedPayloads(targets: variants.count * 2)
        for payload in variants + variants { table.append(payload) }
        #expect(table.distinct == variants)
        let once: [UInt32] = (0..<variants.count).map { UInt32($0) }
        #expect(table.indexes == once + once)
    }

    @Test("the hash reads every byte: a change in the tail or in a full word changes it")
    func hashReadsEveryByte() {
        let bytes = Array("0123456789abcdefXYZ".utf8)
        let hash = RenderedPayloads.hash(bytes)
        for position in bytes.indices {
            var changed = bytes
            changed[position] &+= 1
            #expect(RenderedPayloads.hash(changed) != hash)
        }
        #expect(RenderedPayloads.hash([]) != RenderedPayloads.hash([0]))
    }
}

/// A templated batch rendered by the job batch factory, without a database: each device's locale
/// picks its variant, however often a locale recurs in the batch and however it is spelled.
@Suite("Localized renders in a batch (pure logic)")
struct LocalizedBatchTests {
    /// The job batch factory of a broadcast of `stored` (its default variant `plain`), and the template.
    static func factory(_ plain: APNsPayload, _ stored: [UInt8]) throws -> (JobBatchFactory, PayloadTemplate) {
        let push = Push(
            definition: NewPush(
                id: UUID(), appID: UUID(), audienceJSON: PushAudience.everyone.json, notificationJSON: "{}",
                payload: plain.encoded(), template: stored),
            fanoutCursor: 0, batchesEmitted: 0, createdAt: Date())
        return (try JobBatchFactory(push: push), try PayloadTemplate(stored: stored))
    }

    @Test("repeated, mixed and differently spelled locales each get the variant their own look-up gives")
    func repeatedLocales() throws {
        var plain = APNsPayload(alert: .details(.init(title: "Hi {{plan | default: \"there\"}}", body: "")))
        plain.sound = .named("default")
        var german = plain
        german.alert = .details(.init(title: "Hallo {{plan | default: \"du\"}}", body: ""))
        var austrian = plain
        austrian.alert = .details(.init(title: "Servus {{plan | default: \"du\"}}", body: ""))
        let stored = PayloadTemplate.storedJSON(
            default: plain.encoded(), localized: [("de", german.encoded()), ("de-at", austrian.encoded())])
        let (factory, template) = try Self.factory(plain, stored)
        // More distinct locales than the batch remembers, each coming back later.
        let distinct: [String?] =
            ["de_AT", "fr", "de_DE", nil, "DE-at", "fr_FR", "de", "en_US", "", "de_CH"]
            + (0..<12).map { "x\($0)_YY" }
        let locales = (0..<3).flatMap { _ in distinct }
        var targets = DeviceTokens(reservingCapacity: locales.count, valuesPerDevice: 2)
        for (index, locale) in locales.enumerated() {
            targets.append(deviceID: Int64(index + 1), token: [UInt8](repeating: UInt8(index), count: 32))
            targets.appendValue(locale.map { Array($0.utf8) })
            targets.appendValue(Array("gold".utf8))
        }
        func title(_ payload: Data) throws -> String? {
            let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any]
            return ((object?["aps"] as? [String: Any])?["alert"] as? [String: Any])?["title"] as? String
        }
        let (payloads, indexes) = factory.rendered(targets, with: template)
        for (device, locale) in locales.enumerated() {
            let variant = template.variant(forLocale: Array((locale ?? "").utf8))
            let expected = try title(Data(template.render(variant: variant) { _ in ArraySlice("gold".utf8) }))
            #expect(
                try title(payloads[Int(indexes[device])]) == expected, "device \(device), locale \(locale ?? "-")")
        }
        #expect(payloads.count == 3, "one payload per variant: every device has the same plan")
    }

    @Test(
        "batches cut by a push's own budget, stamp included, render in full: nothing sent empty, each record within its bytes"
    )
    func cutBatchesRenderInFull() throws {
        var plain = APNsPayload(
            alert: .details(.init(title: "{{note}} {{note}}", body: "{{plan | default: \"a long default text\"}}")))
        plain.sound = .named("default")
        var german = plain
        german.alert = .details(
            .init(title: "{{note}}", body: "{{plan | default: \"ein noch viel längerer Standardtext\"}}"))
        let stored = PayloadTemplate.storedJSON(default: plain.encoded(), localized: [("de", german.encoded())])
        let push = Push(
            definition: NewPush(
                id: UUID(), appID: UUID(), audienceJSON: PushAudience.everyone.json, notificationJSON: "{}",
                payload: plain.encoded(), template: stored),
            fanoutCursor: 0, batchesEmitted: 0, createdAt: Date())
        let context = try FanoutContext(
            push: push, batchSize: 500, topics: JobTopics(campaign: "unused", transactional: "unused"))
        let template = try #require(context.factory.template)
        #expect(template.names.count == 2 && context.cutter.renderBudget?.firstName == 1)
        var generator = SystemRandomNumberGenerator()
        var page = AudiencePage()
        let group = page.group(AudienceGroup(environment: .production, topic: "com.example"))
        page.devices = DeviceTokens(reservingCapacity: 2_000, valuesPerDevice: 3)
        for index in 0..<2_000 {
            page.append(deviceID: Int64(index + 1), token: [UInt8](repeating: 1, count: 32), group: group)
            page.devices.appendValue(Array((index % 3 == 0 ? "de_DE" : "fr").utf8))
            // Values from empty to some that escape to six bytes a byte, near the payload limit.
            let length = index % 2 == 0 ? 300 : Int.random(in: 0...40, using: &generator)
            let value = (0..<length).map { _ in
                index % 2 == 0 ? UInt8(1) : UInt8.random(in: 0x61...0x7A, using: &generator)
            }
            let (first, second) = template.names[0] == "note" ? (value, [UInt8]()) : ([UInt8](), value)
            page.devices.appendValue(first)
            page.devices.appendValue(second)
        }
        let cuts = context.cutter.cut(page, firstSequence: 0)
        // Half the devices' bounds near 3,800 bytes: the budget, not the 500, closes the batches.
        #expect(cuts.reduce(0) { $0 + $1.targets.count } == 2_000 && cuts.count > 4)
        for cut in cuts {
            let (payloads, indexes) = context.factory.rendered(cut.targets, with: template)
            #expect(payloads.allSatisfy { !$0.isEmpty } && indexes.count == cut.targets.count)
            #expect(payloads.reduce(0) { $0 + $1.count } <= JobBatchFactory.renderedBytesPerRecord)
            let bounds = context.cutter.renderBudget!.bounds(cut.targets)
            for device in 0..<cut.targets.count {
                #expect(payloads[Int(indexes[device])].count <= bounds[device], "device \(device)")
            }
        }
    }

    @Test(
        "rendered again after its values grew, a batch sends the renders that still fit its record, in order, and the rest empty"
    )
    func grownValuesStayWithinTheRecord() throws {
        let plain = APNsPayload(alert: .details(.init(title: "{{note}}", body: "")))
        let stored = PayloadTemplate.storedJSON(default: plain.encoded(), localized: [])
        let (factory, template) = try Self.factory(plain, stored)
        var targets = DeviceTokens(reservingCapacity: 500, valuesPerDevice: 1)
        for index in 0..<500 {
            // The last device's value is short: its render fits after the long ones that did not.
            targets.append(deviceID: Int64(index + 1), token: [UInt8](repeating: 1, count: 32))
            targets.appendValue(
                Array(String(format: "%04d", index).utf8) + [UInt8](repeating: 0x61, count: index == 499 ? 10 : 3_000))
        }
        let (payloads, indexes) = factory.rendered(targets, with: template)
        #expect(payloads.count == 500 && indexes == (0..<500).map { UInt32($0) })
        let long = payloads.dropLast().filter { !$0.isEmpty }
        #expect(payloads.reduce(0) { $0 + $1.count } <= JobBatchFactory.renderedBytesPerRecord)
        #expect(long.count == JobBatchFactory.renderedBytesPerRecord / long[0].count, "as many as fit, in order")
        #expect(payloads.prefix(long.count).allSatisfy { !$0.isEmpty })
        #expect(payloads.last?.isEmpty == false, "a short render after them still fits")
    }
}
