import Foundation
import HeraldAccess
import Synchronization
import Testing

@testable import HeraldAPI

/// Small rules of the second security review that need no server: what the audit log keeps of a
/// webhook URL, how long a readiness answer is kept, whose bucket a client's address draws on.
@Suite struct HardeningRulesTests {
    @Test("a webhook URL is audited without its query and fragment")
    func auditedWebhookURL() {
        #expect(
            APIHandler.auditedURL("https://hooks.example.com:8443/in/herald?token=s3cret&x=1#frag")
                == "https://hooks.example.com:8443/in/herald?redacted")
        #expect(APIHandler.auditedURL("https://hooks.example.com/in") == "https://hooks.example.com/in")
        #expect(!APIHandler.auditedURL("https://hooks.example.com/?s3cret").contains("s3cret"))
    }

    @Test("/readyz's answer is kept: within its time nobody asks again, a failure included")
    func readinessIsKept() async {
        let asked = Counter()
        let kept = ReadinessCache(keep: .seconds(3600))
        #expect(
            await kept.answer {
                asked.add()
                return false
            } == false)
        #expect(
            await kept.answer {
                asked.add()
                return true
            } == false, "the kept answer, not a new one")
        #expect(asked.value == 1)
        let fresh = ReadinessCache(keep: .zero)
        #expect(
            await fresh.answer {
                asked.add()
                return false
            } == false)
        #expect(
            await fresh.answer {
                asked.add()
                return true
            } == true)
        #expect(asked.value == 3)
    }

    @Test("a client's bucket: an IPv4 address whole, an IPv6 address by its /64")
    func sourceBuckets() {
        let app = UUID()
        #expect(RateLimiter.Key(app: app, source: "203.0.113.7") != RateLimiter.Key(app: app, source: "203.0.113.8"))
        #expect(
            RateLimiter.Key(app: app, source: "2001:db8:1:2::1")
                == RateLimiter.Key(app: app, source: "2001:db8:1:2:ff::9"))
        #expect(
            RateLimiter.Key(app: app, source: "2001:db8:1:2::1") != RateLimiter.Key(app: app, source: "2001:db8:1:3::1")
        )
        #expect(
            RateLimiter.Key(app: app, source: "::ffff:203.0.113.7") == RateLimiter.Key(app: app, source: "203.0.113.7"))
        #expect(RateLimiter.Key(app: app, source: "203.0.113.7") != RateLimiter.Key(app: UUID(), source: "203.0.113.7"))
    }
}

private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
