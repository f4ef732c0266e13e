import Foundation
import HeraldAPNsVocabulary
import Testing

@Suite("JSONValue: one JSON type for payloads, attributes and filters (pure)")
struct JSONValueTests {
    @Test("decoded with its exact type: a boolean is never a number, an integral number is an integer")
    func decoding() throws {
        let value = try JSONValue(jsonText: #"{"b":true,"i":5,"n":5.5,"s":"x","z":null,"l":[1,"a"]}"#)
        #expect(
            value
                == .object([
                    "b": .bool(true), "i": .integer(5), "n": .number(5.5), "s": "x", "z": .null, "l": [1, "a"],
                ]))
        guard case .object(let members) = value else {
            Issue.record("not an object")
            return
        }
        #expect(members["b"]?.numberValue == nil)
        #expect(members["i"]?.numberValue == 5 && members["n"]?.numberValue == 5.5)
    }

    @Test("5 and 5.0 are the same number, equal and hashed alike; other kinds never are")
    func numbers() {
        #expect(JSONValue.integer(5) == .number(5.0))
        #expect(Set<JSONValue>([.integer(5), .number(5.0)]).count == 1)
        #expect(JSONValue.integer(1) != .bool(true) && JSONValue.string("5") != .integer(5))
        #expect(JSONValue.integer(5) != .number(5.5))
        // Exactly the same number, not the nearest double: equality stays transitive.
        let big = 1 << 53
        #expect(JSONValue.integer(big + 1) != .number(Double(big)))
        #expect(JSONValue.integer(big) == .number(Double(big)))
        #expect(Set<JSONValue>([.integer(big), .integer(big + 1), .number(Double(big))]).count == 2)
        // A NaN made in Swift (JSON has none) is equal to itself.
        #expect(JSONValue.number(.nan) == .number(.nan))
        #expect(Set<JSONValue>([.number(.nan), .number(.nan), .number(-0.0), .integer(0)]).count == 2)
    }

    @Test("the payload writer and the stored text say the same thing, keys sorted")
    func writing() throws {
        let value: JSONValue = ["z": 1, "a": ["x", 2.5, true, .null], "q": "say \"hi\"\n"]
        var written: [UInt8] = []
        value.write(to: &written)
        #expect(String(decoding: written, as: UTF8.self) == #"{"a":["x",2.5,true,null],"q":"say \"hi\"\n","z":1}"#)
        #expect(try JSONValue(jsonText: value.jsonText) == value)
        #expect(try JSONValue(jsonText: String(decoding: written, as: UTF8.self)) == value)
    }
}
