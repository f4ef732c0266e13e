import Foundation
import HeraldAPIContract
import Testing

@testable import HeraldAPI

@Suite("The import's NDJSON line scanner")
struct RegistrationLineScannerTests {
    typealias Registration = Components.Schemas.DeviceRegistration

    static func scan(_ line: String) -> Registration? {
        RegistrationLineScanner.scan(ArraySlice(line.utf8))
    }

    static func decoded(_ line: String) -> Registration? {
        try? JSONDecoder().decode(Registration.self, from: Data(line.utf8))
    }

    @Test("a line of the common shape is read without JSONDecoder, as JSONDecoder reads it")
    func commonShape() throws {
        let lines = [
            #"{"token":"00aa","environment":"production"}"#,
            #"{"token":"00aa","environment":"sandbox","tags":["a","b c"],"alias":"user-1","locale":"de_DE","time_zone":"Europe/Berlin"}"#,
            #" { "token" : "00aa" , "environment" : "production" , "tags" : [ ] , "topic" : null } "#,
            #"{"environment":"production","token":"ff","country":"de","app_version":"5.2.0","os_version":"17.1","alias_signature":"ab"}"#,
            #"{"token":"00aa","environment":"production","tags":null,"alias":""}"#,
        ]
        for line in lines {
            let scanned = try #require(Self.scan(line), "\(line)")
            #expect(scanned == Self.decoded(line), "\(line)")
        }
        let full = try #require(Self.scan(lines[1]))
        #expect(full.tags == ["a", "b c"] && full.alias == "user-1" && full.timeZone == "Europe/Berlin")
    }

    @Test("anything else is left to JSONDecoder, which reads it or words what is wrong")
    func otherShapes() {
        let lines = [
            #"{"token":"00aa","environment":"production","alias":"o\"neil"}"#,  // an escape
            #"{"token":"00aa","environment":"production","alias":"Jürgen"}"#,  // not ASCII
            #"{"token":"00aa","environment":"production","attributes":{"plan":"pro"}}"#,
            #"{"token":"00aa","environment":"staging"}"#,  // no such environment
            #"{"token":"00aa","environment":"production","token":"00bb"}"#,  // a key twice
            #"{"token":"00aa","environment":"production","color":"red"}"#,  // an unknown key
            #"{"token":"00aa"}"#,  // no environment
            #"{"token":null,"environment":"production"}"#,
            #"{"token":"00aa","environment":"production","tags":"a"}"#,
            #"{"token":"00aa","environment":"production","tags":[1]}"#,
            #"{"token":"00aa","environment":"production"} x"#,
            #"{"token":"00aa","environment":"production",}"#,
            #"{"token":"00aa","environment":"production""#,
            #"["token"]"#, "{}", "", "nul",
        ]
        for line in lines {
            #expect(Self.scan(line) == nil, "\(line)")
        }
    }

    @Test("on generated lines, whatever the scanner reads JSONDecoder reads the same")
    func agreesWithJSONDecoder() {
        var random = SplitMix64(seed: 22)
        let keys = [
            "token", "environment", "topic", "alias", "alias_signature", "tags", "locale", "time_zone", "country",
            "app_version", "os_version", "attributes", "unknown",
        ]
        let strings = [
            #""00aa""#, #""production""#, #""sandbox""#, #""""#, #""a b""#, #""\u0041""#, #""x\"y""#, #""é""#,
            "\"tab\tin\"", "null", "1", "true", #"["a","b"]"#, "[]", #"{"k":"v"}"#, #"["a",1]"#,
        ]
        let spaces = ["", " ", "\t", "\r"]
        var scannedCount = 0
        for _ in 0..<20_000 {
            var fields: [String] = []
            // Usually a valid core, so that most lines get past the required keys.
            if random.next() % 4 != 0 { fields.append(#""token":"00aa""#) }
            if random.next() % 4 != 0 {
                fields.append(#""environment":"# + (random.next() % 2 == 0 ? #""production""# : #""sandbox""#))
            }
            for _ in 0..<(random.next() % 4) {
                let key = keys[Int(random.next() % UInt64(keys.count))]
                let value = strings[Int(random.next() % UInt64(strings.count))]
                fields.append("\"\(key)\"\(spaces[Int(random.next() % 4)]):\(value)")
            }
            fields.shuffle(using: &random)
            let space = spaces[Int(random.next() % 4)]
            let line = space + "{" + fields.joined(separator: ",\(space)") + "}" + space
            if let scanned = Self.scan(line) {
                scannedCount += 1
                #expect(Self.decoded(line) == scanned, "\(line)")
            }
        }
        // The generator makes plenty of lines of the common shape: the scanner must read them.
        #expect(scannedCount > 2_000)
    }
}

/// A seeded generator, so that a failure can be reproduced.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
