import Testing

@testable import HeraldAPNs

@Suite("Sending again (pure)")
struct APNsResendRuleTests {
    @Test("a renewed token is tried once; an unprocessed request up to the limit; anything else never")
    func rule() {
        var rule = APNsResendRule()
        var answers: [Bool] = []
        for reason: APNsClient.Answer.SendAgain? in [
            nil, .renewedToken, .renewedToken, .unprocessed, .unprocessed, .unprocessed,
        ] {
            answers.append(rule.sendsAgain(for: reason, limit: 2))
        }
        // A second expired token is the answer; the third unprocessed request is too.
        #expect(answers == [false, true, false, true, true, false])
        #expect(rule.unprocessedResends == 2 && rule.sentWithRenewedToken)
    }
}
