import Foundation
import HeraldAPIContract
import Testing

@testable import HeraldAPI

@Suite("A push's CSV report")
struct PushReportTests {
    @Test("cells a spreadsheet would run as formulas are defused; commas and quotes are quoted")
    func cells() {
        #expect(PushReport.cell("reply") == "reply")
        #expect(PushReport.cell("-5") == "-5")
        #expect(PushReport.cell("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(PushReport.cell("@sum") == "'@sum")
        #expect(PushReport.cell("-cmd") == "'-cmd")
        #expect(PushReport.cell("a,b") == "\"a,b\"")
    }

    @Test("a line per figure: counters, reasons, engagement with its actions, and each variant's")
    func lines() {
        var counters = Components.Schemas.Counters(
            targeted: 10, accepted: 7, deliveredOnline: 1, rejected: 1, expired: 0, canceled: 0, skipped: 1,
            tokensInvalidated: 1, rejectedByReason: .init(additionalProperties: ["Unregistered": 1]),
            skippedByReason: .init(additionalProperties: ["holdout": 1]))
        counters.skipped = 1
        var status = Components.Schemas.PushStatus(
            id: "9d41", state: .completed, pushType: "alert", priority: 10, priorityClass: .campaign, paused: false,
            counters: counters, createdAt: Date(timeIntervalSince1970: 0))
        let engagement = Components.Schemas.Engagement(
            reached: 8, received: 6, opened: 2, dismissed: 0, actions: .init(additionalProperties: ["-x": 1]),
            receivedRate: 0.75, openRate: 0.25)
        status.engagement = engagement
        status.holdout = 0.1
        status.variants = [
            .init(
                name: "a", weight: 2,
                counters: .init(
                    targeted: 9, accepted: 7, deliveredOnline: 1, rejected: 1, expired: 0, canceled: 0, skipped: 0),
                engagement: engagement)
        ]
        let lines = PushReport(status: status).csv.components(separatedBy: "\r\n")
        #expect(lines.first == "scope,metric,value" && lines.last == "")
        for expected in [
            "push,id,9d41", "push,created_at,1970-01-01T00:00:00Z", "counters,delivered_online,1",
            "rejected_by_reason,Unregistered,1", "skipped_by_reason,holdout,1", "engagement,open_rate,0.2500",
            "engagement,action -x,1", "ab_test,holdout,0.1000", "variant a,weight,2", "variant a,targeted,9",
            "variant a,opened,2",
        ] {
            #expect(lines.contains(expected), "\(expected)")
        }
    }
}
