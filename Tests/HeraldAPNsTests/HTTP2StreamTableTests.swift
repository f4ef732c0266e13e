import Testing

@testable import HeraldHTTP2

@Suite("The table of open streams by stream ID")
struct HTTP2StreamTableTests {
    @Test("A client's streams come and go as a dictionary's would, in any order")
    func matchesDictionary() {
        var table = HTTP2StreamTable<Int>()
        var model: [Int32: Int] = [:]
        // A fixed sequence (a linear congruential step, high bits used), so that a failure replays.
        var state: UInt64 = 22
        func random() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        var nextStreamID: Int32 = 1
        for step in 0..<20_000 {
            switch random() % 10 {
            case 0..<5:
                // A new stream: odd and increasing, as a client's, with gaps (as when streams
                // go to other connections) so that keys also collide, as consecutive ones rarely do.
                table[nextStreamID] = step
                model[nextStreamID] = step
                nextStreamID += 2 * Int32(1 + random() % 64)
            case 5..<9:
                // One closes: any of those open, or one that never was.
                let streamID =
                    model.isEmpty || random() % 8 == 0
                    ? Int32(truncatingIfNeeded: random() % UInt64(nextStreamID)) | 1
                    : Array(model.keys)[Int(random() % UInt64(model.count))]
                #expect(table.removeValue(forKey: streamID) == model.removeValue(forKey: streamID))
            default:
                if let streamID = model.keys.first {
                    table[streamID] = -step
                    model[streamID] = -step
                }
            }
            #expect(table.count == model.count)
        }
        for (streamID, value) in model { #expect(table[streamID] == value) }
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.streamID, $0.value) }) == model)
    }

    @Test("IDs that share a home slot all stay reachable when one between them leaves")
    func collisionsSurviveRemoval() {
        // A new table has 16 slots (and grows past 8 streams): find client stream IDs whose home
        // is the last slot and IDs whose home is the first, so that a run of them wraps around.
        let odd = stride(from: Int32(1), to: 100_000, by: 2)
        let last = Array(odd.lazy.filter { HTTP2StreamTable<String>.home(of: $0, shift: 28) == 15 }.prefix(2))
        let first = Array(odd.lazy.filter { HTTP2StreamTable<String>.home(of: $0, shift: 28) == 0 }.prefix(4))
        var table = HTTP2StreamTable<String>()
        for streamID in last + first { table[streamID] = "stream \(streamID)" }
        #expect(table.count == 6)
        // Slots: 15 = last[0], 0 = last[1] (wrapped), 1...4 = first. Take one from the middle,
        // then the run's start: the rest move back and stay reachable.
        table[first[1]] = nil
        table[last[0]] = nil
        #expect(table[last[0]] == nil)
        #expect(table[first[1]] == nil)
        for streamID in [last[1], first[0], first[2], first[3]] { #expect(table[streamID] == "stream \(streamID)") }
        table[last[1]] = nil
        table[first[0]] = nil
        #expect(table[first[2]] == "stream \(first[2])")
        #expect(table[first[3]] == "stream \(first[3])")
        #expect(table.count == 2)
    }

    @Test("Thousands of streams open at once, then none")
    func growsAndEmpties() {
        var table = HTTP2StreamTable<Int32>()
        for streamID in stride(from: Int32(1), to: 20_001, by: 2) { table[streamID] = streamID * 3 }
        #expect(table.count == 10_000)
        #expect(table[9_999] == 29_997)
        #expect(table[10_000] == nil)
        table.removeAll()
        #expect(table.isEmpty)
        #expect(table[9_999] == nil)
        #expect(Array(table).isEmpty)
    }

    @Test("Field names are compared whole: the same bytes match, any other length or byte does not")
    func fieldNames() {
        func matches(_ name: String, _ literal: StaticString) -> Bool {
            Array(name.utf8).withUnsafeBytes { HTTP2FieldName.matches($0, literal) }
        }
        #expect(matches(":status", ":status"))
        #expect(!matches(":statuS", ":status"))
        #expect(!matches("x:status", ":status"))
        #expect(!matches(":statu", ":status"))
        #expect(matches("authorization", "authorization"))
        #expect(!matches("authorizatioN", "authorization"))
        #expect(!matches("Authorization", "authorization"))
        #expect(!matches("apns-priority", "authorization"))
        #expect(HTTP2HeaderField("authorization", "bearer x").neverIndexed)
        #expect(!HTTP2HeaderField("apns-priority", "10").neverIndexed)
    }
}
