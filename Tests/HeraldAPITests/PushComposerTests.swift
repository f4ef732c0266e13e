import Foundation
import HeraldAPIContract
import HeraldAPNs
import HeraldAccess
import HeraldDomain
import HeraldStore
import OpenAPIRuntime
import Testing

@testable import HeraldAPI

@Suite("Push composition, rate limits and import parsing (pure logic)")
struct PushComposerTests {
    let now = Date(timeIntervalSince1970: 2_000_000_000)

    func request(_ json: String) throws -> Components.Schemas.PushRequest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(Components.Schemas.PushRequest.self, from: Data(json.utf8))
    }

    @Test func silentPushesAreBackgroundWithPriorityFive() throws {
        let composed = try PushComposer(now: now).compose(
            request(#"{"audience":{"all":true},"notification":{"silent":true,"data":{"sync":1}}}"#))
        #expect(composed.pushType == .background && composed.priority == .conserve)
        #expect(String(decoding: composed.payload, as: UTF8.self) == #"{"aps":{"content-available":1},"sync":1}"#)
    }

    @Test func textsLongerThanTheContractAllowsAreRefusedByName() throws {
        let long = String(repeating: "x", count: 257)
        for (notification, field) in [
            (#"{"target_content_id":"\#(long)"}"#, "notification.target_content_id"),
            (#"{"thread_id":"\#(long)","alert":{"body":"b"}}"#, "notification.thread_id"),
            (
                #"{"alert":{"loc_key":"k","loc_args":["a","\#(String(repeating: "é", count: 1025))"]}}"#,
                "notification.alert.loc_args"
            ),
        ] {
            let decoded = try request(#"{"audience":{"all":true},"notification":\#(notification)}"#)
            do {
                _ = try PushComposer(now: now).compose(decoded)
                Issue.record("accepted \(field) over its limit")
            } catch {
                #expect(error.field == field)
            }
        }
        // At the limit, in characters (Unicode scalars), not bytes: accepted.
        let composed = try PushComposer(now: now).compose(
            request(
                #"{"audience":{"all":true},"notification":{"category":"\#(String(repeating: "é", count: 256))","alert":{"body":"b"}}}"#
            ))
        #expect(composed.payload.count > 512)
    }

    @Test func audiencesCombineAndMustSelectSomebody() throws {
        let composed = try PushComposer(now: now).compose(
            request(
                #"{"audience":{"aliases":["a"],"tags":{"all":["x","y"],"none":["z"]},"environment":"sandbox"},"notification":{"alert":{"body":"b"}}}"#
            ))
        #expect(
            composed.audience
                == PushAudience(aliases: ["a"], tags: .init(all: ["x", "y"], none: ["z"]), environment: .sandbox))
        #expect(throws: APIError.self) {
            try PushComposer(now: now).compose(
                request(#"{"audience":{"tags":{}},"notification":{"alert":{"body":"b"}}}"#))
        }
        #expect(throws: APIError.self) {
            try PushComposer(now: now).compose(
                request(#"{"audience":{"aliases":[""]},"notification":{"alert":{"body":"b"}}}"#))
        }
    }

    @Test(
        "a push's priority class: transactional by default for an unthrottled list, campaign otherwise; transactional refused for anything else"
    )
    func priorityClasses() throws {
        func composed(_ audience: String, _ options: String = "{}") throws -> PushComposer.Composed {
            try PushComposer(now: now).compose(
                request(#"{"audience":\#(audience),"notification":{"alert":{"body":"b"}},"options":\#(options)}"#))
        }
        #expect(try composed(#"{"aliases":["a"]}"#).priorityClass == .transactional)
        #expect(try composed(#"{"registration_ids":[7],"tags":{"any":["x"]}}"#).priorityClass == .transactional)
        #expect(try composed(#"{"aliases":["a"]}"#, #"{"throttle":{"per_second":5}}"#).priorityClass == .campaign)
        #expect(try composed(#"{"aliases":["a"]}"#, #"{"priority_class":"campaign"}"#).priorityClass == .campaign)
        #expect(try composed(#"{"all":true}"#).priorityClass == .campaign)
        #expect(try composed(#"{"tags":{"any":["x"]}}"#).priorityClass == .campaign)
        #expect(
            try composed(#"{"aliases":["a"]}"#, #"{"priority_class":"transactional"}"#).priorityClass == .transactional)
        for (audience, options, message) in [
            (#"{"all":true}"#, #"{"priority_class":"transactional"}"#, "names its devices"),
            (#"{"tags":{"any":["x"]}}"#, #"{"priority_class":"transactional"}"#, "names its devices"),
            (
                #"{"aliases":["a"]}"#, #"{"priority_class":"transactional","throttle":{"per_second":5}}"#,
                "a throttle is for campaigns"
            ),
        ] {
            let error = #expect(throws: APIError.self) { try composed(audience, options) }
            #expect(error?.field == "options.priority_class")
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        }
    }

    @Test(
        "local_time: the next HH:MM in each zone, or on a date planned when UTC+14 reaches it; quiet_hours hold; both make a campaign"
    )
    func localTimeAndQuietHours() throws {
        // now: 2033-05-18T03:33:20Z.
        func composed(_ options: String, audience: String = #"{"all":true}"#) throws -> PushComposer.Composed {
            try PushComposer(now: now).compose(
                request(#"{"audience":\#(audience),"notification":{"alert":{"body":"b"}},"options":\#(options)}"#))
        }
        let next = try composed(#"{"local_time":{"time":"09:00"},"time_to_live_seconds":3600}"#)
        #expect(next.timing == PushTiming(localTime: .init("09:00"), timeToLiveSeconds: 3600))
        #expect(
            next.scheduledAt == nil && next.expiresAt == nil, "each wave's notifications live an hour from its start")
        #expect(
            try composed(#"{"local_time":{"time":"09:00"}}"#, audience: #"{"aliases":["a"]}"#).priorityClass
                == .campaign)

        let dated = try composed(#"{"local_time":{"time":"09:00","date":"2033-05-20"}}"#)
        #expect(dated.scheduledAt == ISO8601DateFormatter().date(from: "2033-05-19T19:00:00Z"), "UTC+14's 09:00")
        // Today's 09:00 has passed in the east and is still ahead in the west: planned at once.
        #expect(try composed(#"{"local_time":{"time":"09:00","date":"2033-05-18"}}"#).scheduledAt == nil)

        let held = try composed(#"{"quiet_hours":"hold","time_to_live_seconds":60}"#)
        #expect(held.timing == PushTiming(quietHours: .hold, timeToLiveSeconds: 60))
        #expect(held.expiresAt == now.addingTimeInterval(60), "sent at once when the app has no quiet hours")
        #expect(try composed(#"{"quiet_hours":"skip"}"#).timing == PushTiming(quietHours: .skip))
        #expect(try composed(#"{}"#).timing == nil)

        for (options, field, message) in [
            (#"{"local_time":{"time":"9:00"}}"#, "options.local_time.time", "HH:MM"),
            (#"{"local_time":{"time":"09:00","date":"2033-02-30"}}"#, "options.local_time.date", "YYYY-MM-DD"),
            (
                #"{"local_time":{"time":"09:00","date":"2033-05-17"}}"#, "options.local_time.date",
                "has passed in every time zone"
            ),
            (#"{"local_time":{"time":"09:00","date":"2034-06-01"}}"#, "options.local_time.date", "a year ahead"),
            (
                #"{"local_time":{"time":"09:00"},"scheduled_at":"2033-05-19T00:00:00Z"}"#, "options.scheduled_at",
                "leave scheduled_at out"
            ),
            (
                #"{"local_time":{"time":"09:00"},"priority_class":"transactional"}"#, "options.priority_class",
                "for campaigns"
            ),
        ] {
            let error = #expect(throws: APIError.self) {
                try composed(options, audience: #"{"aliases":["a"]}"#)
            }
            #expect(error?.field == field, "\(options)")
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        }
    }

    @Test func timingOptions() throws {
        let composer = PushComposer(now: now)
        let scheduled = ISO8601DateFormatter().string(from: now.addingTimeInterval(600))
        let composed = try composer.compose(
            request(
                #"{"audience":{"all":true},"notification":{"alert":{"body":"b"}},"options":{"scheduled_at":"\#(scheduled)","time_to_live_seconds":60,"throttle":{"finish_within_seconds":300}}}"#
            ))
        #expect(composed.scheduledAt == now.addingTimeInterval(600))
        #expect(composed.expiresAt == now.addingTimeInterval(660), "the time to live counts from the scheduled start")
        #expect(composed.finishWithinSeconds == 300 && composed.throttlePerSecond == nil)
        let both =
            #"{"audience":{"all":true},"notification":{"alert":{"body":"b"}},"options":{"time_to_live_seconds":60,"expires_at":"2040-01-01T00:00:00Z"}}"#
        #expect(throws: APIError.self) { try composer.compose(request(both)) }
        let tooFar = ISO8601DateFormatter().string(from: now.addingTimeInterval(400 * 86_400))
        #expect(throws: APIError.self) {
            try composer.compose(
                request(
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"b"}},"options":{"scheduled_at":"\#(tooFar)"}}"#
                ))
        }
    }

    @Test func rawApsIsSentAsGivenAndSizeIsCheckedPerType() throws {
        let composer = PushComposer(now: now)
        let composed = try composer.compose(
            request(#"{"audience":{"all":true},"aps":{"alert":"hi","sound":"default"},"data":{"n":[1,2.5,null]}}"#))
        #expect(
            String(decoding: composed.payload, as: UTF8.self)
                == #"{"aps":{"alert":"hi","sound":"default"},"n":[1,2.5,null]}"#)
        let body = String(repeating: "x", count: 4080)
        #expect(throws: APIError.self) {
            try composer.compose(request(#"{"audience":{"all":true},"notification":{"alert":{"body":"\#(body)"}}}"#))
        }
        let voip = try composer.compose(
            request(
                #"{"audience":{"all":true},"notification":{"alert":{"body":"\#(body)"}},"options":{"push_type":"voip"}}"#
            ))
        #expect(voip.payload.count > 4096 && voip.priority == .immediate)
    }

    @Test("the payload's limit keeps room for the herald key; custom data cannot use the key")
    func heraldKeyIsReserved() throws {
        let composer = PushComposer(now: now)
        func push(_ body: String) throws -> PushComposer.Composed {
            try composer.compose(request(#"{"audience":{"all":true},"notification":{"alert":{"body":"\#(body)"}}}"#))
        }
        let overhead = try push("x").payload.count - 1
        let fits = try push(String(repeating: "x", count: 4096 - HeraldPayloadKey.reservedBytes - overhead))
        #expect(fits.sentPayloadBytes == 4096)
        do {
            _ = try push(String(repeating: "x", count: 4097 - HeraldPayloadKey.reservedBytes - overhead))
            Issue.record("a payload that fits only without the herald key was accepted")
        } catch let error as APIError {
            #expect(error.code == .payloadTooLarge && error.message.contains("4097"))
            #expect(error.message.contains("herald"), "says where the other bytes went")
        }
        for body in [
            #"{"audience":{"all":true},"notification":{"alert":{"body":"a"},"data":{"herald":1}}}"#,
            #"{"audience":{"all":true},"aps":{"alert":"a"},"data":{"herald":{"push_id":"x"}}}"#,
        ] {
            #expect(throws: APIError.self) { try composer.compose(request(body)) }
        }
        let nested = try composer.compose(
            request(#"{"audience":{"all":true},"notification":{"alert":{"body":"a"},"data":{"x":{"herald":1}}}}"#))
        #expect(!nested.payload.isEmpty, "only the top-level key is Herald's")
    }

    @Test func rateLimiterRefillsAtItsRate() {
        var bucket = RateLimiter.Bucket(tokens: 2, updated: 0)
        #expect(RateLimiter.take(&bucket, now: 0, rate: 1, burst: 2).allowed)
        #expect(RateLimiter.take(&bucket, now: 0, rate: 1, burst: 2).allowed)
        let refused = RateLimiter.take(&bucket, now: 0.5, rate: 1, burst: 2)
        #expect(!refused.allowed && refused.retryAfterSeconds == 1)
        #expect(RateLimiter.take(&bucket, now: 1.0, rate: 1, burst: 2).allowed)
        let refill = RateLimiter.take(&bucket, now: 100, rate: 1, burst: 2)
        #expect(refill.allowed && refill.remaining == 1, "never more than the burst")
    }

    @Test("the buckets stay bounded: past the bound, buckets that have refilled are dropped, busy ones kept")
    func rateLimiterBucketsAreBounded() {
        let limiter = RateLimiter(ratePerSecond: 10, burst: 10, maximumBuckets: 100)
        let busy = UUID()
        #expect((0..<10).allSatisfy { _ in limiter.take(appID: busy, now: 100).allowed })
        for index in 0..<99 { _ = limiter.take(appID: UUID(), now: Double(index) / 100) }
        #expect(limiter.bucketCount == 100)
        // A new app past the bound: every bucket full again (idle over a second) goes; the busy one stays.
        _ = limiter.take(appID: UUID(), now: 100.5)
        #expect(limiter.bucketCount == 2)
        // Kept: half refilled (5) and one taken, where a new bucket would have had 9 left.
        #expect(limiter.take(appID: busy, now: 100.5).remaining == 4, "the busy app's bucket was kept")
    }

    @Test("N processes each allow 1/N of an app's rate and burst")
    func rateLimiterSharesTheLimitAmongProcesses() {
        let limiter = RateLimiter(ratePerSecond: 100, burst: 10)
        let app = UUID()
        limiter.replicas.store(2, ordering: .relaxed)
        // Half the burst at once, then half the rate: 50 a second.
        #expect((0..<5).allSatisfy { _ in limiter.take(appID: app, now: 0).allowed })
        #expect(!limiter.take(appID: app, now: 0).allowed)
        // Over the next second: the bucket is full again (5), and 50 a second refill it.
        let second = (0..<100).filter { limiter.take(appID: app, now: 1 + Double($0) / 100).allowed }.count
        #expect(second == 5 + 49)
        // Alone again: the whole rate.
        limiter.replicas.store(1, ordering: .relaxed)
        let alone = (0..<200).filter { limiter.take(appID: app, now: 3 + Double($0) / 200).allowed }.count
        #expect(alone == 10 + 99)
    }

    @Test func importParserHandlesSplitLinesCSVQuotesAndBadLines() async {
        var parser = DeviceImportParser(format: .csv, appID: UUID(), bundleID: "com.example")
        let token = String(repeating: "ab", count: 32)
        var rows = await parser.feed(Array("token,environment,alias\n\(token),produ".utf8))
        rows += await parser.feed(Array("ction,\"Smith, \"\"J\"\"\"\r\nbad,production,x\n".utf8))
        rows += await parser.feed(Array("\(token),sandbox,".utf8))
        rows += parser.finish()
        #expect(
            rows.count == 2 && rows[0].registration.alias == "Smith, \"J\""
                && rows[0].registration.topic == "com.example" && rows[1].registration.environment == .sandbox
                && rows.map(\.number) == [2, 4])
        #expect(parser.lines == 3 && parser.rejected == 1 && parser.errors.first?.line == 3)
        #expect(CSV.fields(ArraySlice("a,\"b,c\",,d".utf8)) == ["a", "b,c", "", "d"])
        #expect(CSV.fields(ArraySlice("\"x\"\"y\",Jürgen,\"é,ü\"".utf8)) == ["x\"y", "Jürgen", "é,ü"])
        #expect(
            CSV.fields(ArraySlice("\"open".utf8)) == ["open"] && CSV.fields(ArraySlice("".utf8)) == [""]
                && CSV.fields(ArraySlice("a,".utf8)) == ["a", ""])
    }
}
