import HeraldAPNsVocabulary
import HeraldHTTP2
import Testing

@testable import APNsSimulator

/// Apple's request rules and the header container, without sockets.
@Suite("APNs request rules (pure)")
struct APNsRequestRulesTests {
    func token(_ path: String) -> Result<String, APNsReason> {
        Array(path.utf8).withUnsafeBytes { APNsRequestRules.deviceToken(fromPath: $0) }
    }

    @Test("device tokens: hex of any even length, lower-cased; everything else refused with Apple's reason")
    func deviceTokens() {
        #expect(token("/3/device/AB01cd") == .success("ab01cd"))
        #expect(
            token("/3/device/" + String(repeating: "f", count: 200)) == .success(String(repeating: "f", count: 200)))
        #expect(token("/3/device/") == .failure(.missingDeviceToken))
        #expect(token("/3/device/abc") == .failure(.badDeviceToken))
        #expect(token("/3/device/zz") == .failure(.badDeviceToken))
        #expect(token("/3/device/ab/cd") == .failure(.badPath))
        #expect(token("/3/devices/ab") == .failure(.badPath))
        #expect(token("/3/dev") == .failure(.badPath))
    }

    @Test("push types and their topic suffixes")
    func pushTypes() throws {
        let cases: [(String?, String, String?)] = [
            (nil, "com.a.b", "com.a.b"),
            ("background", "com.a.b", "com.a.b"),
            ("voip", "com.a.b.voip", "com.a.b"),
            ("complication", "com.a.b.complication", "com.a.b"),
            ("fileprovider", "com.a.b.pushkit.fileprovider", "com.a.b"),
            ("liveactivity", "com.a.b.push-type.liveactivity", "com.a.b"),
            ("location", "com.a.b.location-query", "com.a.b"),
            ("pushtotalk", "com.a.b.voip-ptt", "com.a.b"),
            ("widgets", "com.a.b.push-type.widgets", "com.a.b"),
            ("controls", "com.a.b.push-type.controls", "com.a.b"),
            ("voip", "com.a.b", nil),
            ("toast", "com.a.b", nil),
        ]
        for (pushType, topic, appTopic) in cases {
            let result = APNsRequestRules.pushType(pushType, topic: topic)
            switch (result, appTopic) {
            case (.success(let value), let expected?):
                #expect(String(value.appTopic) == expected, "\(pushType ?? "-") \(topic)")
            case (.failure(let reason), nil): #expect(reason == .invalidPushType)
            default: Issue.record("\(pushType ?? "-") \(topic): got \(result)")
            }
        }
        #expect(APNsPushType.voip.maximumPayloadBytes == 5120)
        #expect(APNsPushType.alert.maximumPayloadBytes == 4096)
    }

    @Test("apns-id, priority, expiration and topic syntax")
    func headerValues() {
        #expect(APNsRequestRules.isUUID("123E4567-E89B-12D3-A456-426614174000"))
        #expect(APNsRequestRules.isUUID("123e4567-e89b-12d3-a456-426614174000"))
        #expect(!APNsRequestRules.isUUID("123e4567e89b12d3a456426614174000"))
        #expect(!APNsRequestRules.isUUID("123e4567-e89b-12d3-a456-42661417400g"))
        #expect(APNsRequestRules.priority(nil) == .success(10))
        #expect(APNsRequestRules.priority("1") == .success(1))
        #expect(APNsRequestRules.priority("6") == .failure(.badPriority))
        #expect(APNsRequestRules.expiration("0") == .success(0))
        #expect(APNsRequestRules.expiration("-5") == .failure(.badExpirationDate))
        #expect(APNsRequestRules.isWellFormedTopic("com.example-app_1"))
        #expect(!APNsRequestRules.isWellFormedTopic("com example"))
        #expect(!APNsRequestRules.isWellFormedTopic(""))
    }

    @Test("generated apns-ids are version 4 UUIDs, different each time")
    func generatedIDs() {
        var random = SimulatorRandom(seed: 42)
        let ids = (0..<1000).map { _ in random.uuidString() }
        #expect(Set(ids).count == 1000)
        for id in ids.prefix(20) {
            #expect(APNsRequestRules.isUUID(id))
            #expect(Array(id.utf8)[14] == UInt8(ascii: "4"))
            #expect(
                [UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "A"), UInt8(ascii: "B")].contains(
                    Array(id.utf8)[19]))
        }
    }

    @Test("status for each reason is Apple's")
    func statuses() {
        #expect(APNsReason.badDeviceToken.status == 400)
        #expect(APNsReason.expiredProviderToken.status == 403)
        #expect(APNsReason.badPath.status == 404)
        #expect(APNsReason.methodNotAllowed.status == 405)
        #expect(APNsReason.unregistered.status == 410)
        #expect(APNsReason.payloadTooLarge.status == 413)
        #expect(APNsReason.tooManyProviderTokenUpdates.status == 429)
        #expect(APNsReason.internalServerError.status == 500)
        #expect(APNsReason.shutdown.status == 503)
    }
}

@Suite("HTTP/2 header fields (pure)")
struct HTTP2HeaderFieldsTests {
    @Test("lookup, counting and duplicates")
    func lookups() {
        let fields = HTTP2HeaderFields([(":status", "200"), ("apns-id", "X"), ("vary", "a"), ("vary", "b")])
        #expect(fields[":status"] == "200")
        #expect(fields["vary"] == "a")
        #expect(fields["missing"] == nil)
        #expect(fields.count(of: "vary") == 2)
        #expect(fields.hasDuplicateNames)
        #expect(!HTTP2HeaderFields([("a", "1"), ("b", "2")]).hasDuplicateNames)
        #expect(fields.fields.map(\.name) == [":status", "apns-id", "vary", "vary"])
        var names: [String] = []
        fields.forEachField { name, _ in names.append(String(decoding: name, as: UTF8.self)) }
        #expect(names.count == 4)
    }
}

/// The simulator's device registry: tokens of up to 32 bytes kept as bytes, longer ones as text,
/// either way found whatever the case of the request's hex.
@Suite("apns-sim device registry (pure)")
struct DeviceRegistryTests {
    func lookup(_ registry: DeviceRegistry, _ hex: String, _ topic: Substring = "com.a.b") -> DeviceRegistry.Lookup {
        Array(hex.utf8).withUnsafeBytes { registry.lookup(tokenHex: $0, appTopic: topic) }
    }

    @Test("each kind of device is found by its token in either case, for its own topic only")
    func lookups() {
        let short = String(repeating: "0123456789abcdef", count: 4)  // 32 bytes, the usual token
        let long = String(repeating: "ab", count: 100)  // 100 bytes
        let registry = DeviceRegistry(
            acceptAnyToken: false,
            devices: [
                SimulatedDevice(token: short.uppercased(), topic: "com.a.b"),
                SimulatedDevice(token: long, topic: "com.a.b", unregisteredAt: 1_700_000_000_000),
                SimulatedDevice(token: "00ff", topic: "com.other"),
            ])
        #expect(registry.count == 3)
        #expect(lookup(registry, short) == .deliverable)
        #expect(lookup(registry, short.uppercased()) == .deliverable)
        #expect(lookup(registry, short, "com.other") == .otherTopic)
        #expect(lookup(registry, long.uppercased()) == .unregistered(at: 1_700_000_000_000))
        #expect(lookup(registry, "00FF", "com.other") == .deliverable)
        // A token is its bytes and their number: a leading zero byte is not the same token.
        #expect(lookup(registry, "0000ff", "com.other") == .unknown)
        #expect(lookup(registry, "ff", "com.other") == .unknown)
        #expect(lookup(registry, String(short.dropLast(2)) + "ee") == .unknown)
        // Adding a device again replaces it.
        registry.add([SimulatedDevice(token: short, topic: "com.a.b", unregisteredAt: 5)])
        #expect(registry.count == 3)
        #expect(lookup(registry, short) == .unregistered(at: 5))
        // With acceptAnyToken, an unknown token is deliverable; a known one keeps its rules.
        let open = DeviceRegistry(acceptAnyToken: true, devices: [SimulatedDevice(token: "00ff", topic: "com.x")])
        #expect(lookup(open, "abcd") == .deliverable)
        #expect(lookup(open, "00ff") == .otherTopic)
    }

    @Test("the token table finds every token it was given, the last value of a token set twice, nothing else")
    func tokenTable() throws {
        var table = TokenTable<Int>()
        func token(_ number: Int, digits: Int = 64) -> DeviceRegistry.TokenBytes {
            let hex = String(number, radix: 16)
            return DeviceRegistry.TokenBytes(hex: String(repeating: "0", count: digits - hex.count) + hex)!
        }
        // Sequential tokens (the worst case for a weak hash), through several growths.
        for number in 0..<20_000 { table.set(number, for: token(number)) }
        for number in stride(from: 0, to: 20_000, by: 7) { table.set(-number, for: token(number)) }
        #expect(table.count == 20_000)
        for number in 0..<20_000 { #expect(table[token(number)] == (number % 7 == 0 ? -number : number)) }
        #expect(table[token(20_000)] == nil)
        // The same digits at another length are another token.
        #expect(table[token(5, digits: 62)] == nil)
        table.set(1, for: token(5, digits: 62))
        #expect(table[token(5, digits: 62)] == 1 && table[token(5)] == 5 && table.count == 20_001)
        // A value: a copy changed leaves the original as it was.
        var copy = table
        copy.set(99, for: token(6))
        #expect(copy[token(6)] == 99 && table[token(6)] == 6)
    }

    @Test("token bytes: hex of even length up to 64 digits, in either case")
    func tokenBytes() {
        #expect(DeviceRegistry.TokenBytes(hex: "AbCd") == DeviceRegistry.TokenBytes(hex: "abcd"))
        #expect(DeviceRegistry.TokenBytes(hex: "abc") == nil)
        #expect(DeviceRegistry.TokenBytes(hex: "zz") == nil)
        #expect(DeviceRegistry.TokenBytes(hex: String(repeating: "f", count: 66)) == nil)
        #expect(DeviceRegistry.TokenBytes(hex: String(repeating: "f", count: 64))?.length == 32)
    }
}
