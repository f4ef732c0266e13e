import HeraldAccess
import Testing

@testable import HeraldAPI

@Suite("LeastRecentlyUsed")
struct LeastRecentlyUsedTests {
    @Test("when full, the entry used least recently is forgotten; reading an entry makes it recent")
    func forgetsLeastRecentlyUsed() {
        var cache = LeastRecentlyUsed<String, Int>(capacity: 3)
        cache.set(1, for: "a")
        cache.set(2, for: "b")
        cache.set(3, for: "c")
        #expect(cache.value(for: "a") == 1)  // "b" is now the least recently used
        cache.set(4, for: "d")
        #expect(cache.count == 3)
        #expect(cache.value(for: "b") == nil)
        #expect(cache.value(for: "c") == 3)
        cache.set(5, for: "a")  // an update, not an insertion
        cache.set(6, for: "e")  // forgets "d"
        #expect(cache.value(for: "d") == nil)
        #expect(cache.value(for: "a") == 5 && cache.value(for: "c") == 3 && cache.value(for: "e") == 6)
        cache.removeAll { $0 == 3 }
        #expect(cache.count == 2 && cache.value(for: "c") == nil)
        cache.set(7, for: "f")
        cache.set(8, for: "g")  // forgets the least recent of "a" and "e": "a" was read before "e"
        #expect(cache.value(for: "a") == nil && cache.value(for: "e") == 6)
    }
}
