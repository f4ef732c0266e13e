import Foundation
import HeraldAPIContract
import Mustache
import Testing

@testable import HeraldConsole

/// The compose form as the browser posts it, turned into the Open API's push request.
@Suite("console: the compose form")
struct PushFormTests {
    @Test("a tag push with options becomes the request the API takes")
    func tagPush() throws {
        let form = PushForm(fields: [
            "audience": "tags", "tags_any": "vip, beta", "tags_none": "opted-out\n", "environment": "sandbox",
            "title": " Sale ", "body": "Half price today", "badge": "3", "silent": "on",
            "data": #"{"screen": "sale", "id": 42}"#, "collapse_id": "sale-1", "ttl_seconds": "3600",
            "scheduled_at": "2030-01-02T03:04", "throttle": "deadline", "finish_within_minutes": "90",
            "csrf": "ignored",
        ])
        let request = try form.request()
        #expect(request.audience.tags?.any == ["vip", "beta"])
        #expect(request.audience.tags?.none == ["opted-out"])
        #expect(request.audience.tags?.all == nil)
        #expect(request.audience.environment == .sandbox)
        #expect(request.audience.all == nil)
        #expect(request.notification?.alert?.title == "Sale")
        #expect(request.notification?.alert?.body == "Half price today")
        #expect(request.notification?.badge == 3)
        #expect(request.notification?.silent == true)
        #expect(request.notification?.data?.value["screen"] as? String == "sale")
        #expect(request.options?.collapseId == "sale-1")
        #expect(request.options?.timeToLiveSeconds == 3600)
        #expect(request.options?.throttle?.finishWithinSeconds == 5400)
        #expect(request.options?.priorityClass == nil, "no class chosen: the API's default")
        let code = try PushForm(fields: [
            "audience": "aliases", "aliases": "user-1", "body": "Your code", "priority_class": "transactional",
        ]).request()
        #expect(code.options?.priorityClass == .transactional)
        #expect(PushForm.formField(forRequestField: "options.priority_class") == "priority_class")
        #expect(request.options?.channel == nil, "no channel chosen: auto")
        let inApp = try PushForm(fields: ["audience": "all", "body": "Sale ends soon", "channel": "online"]).request()
        #expect(inApp.options?.channel == .online)
        #expect(
            throws: PushForm.Problem(field: "channel", message: "The channel is automatic, APNs only or online only.")
        ) {
            try PushForm(fields: ["audience": "all", "body": "x", "channel": "pigeon"]).request()
        }
        #expect(PushForm.formField(forRequestField: "options.channel") == "channel")
        let engaged = try PushForm(fields: [
            "audience": "all", "body": "Sale", "skip_unauthorized": "on", "holdout_percent": "10",
        ]).request()
        #expect(engaged.options?.skipUnauthorized == true && engaged.options?.holdout == 0.1)
        #expect(request.options?.skipUnauthorized == nil && request.options?.holdout == nil)
        #expect(throws: PushForm.Problem(field: "holdout_percent", message: "A holdout is 0 to 50 % of the audience."))
        {
            try PushForm(fields: ["audience": "all", "body": "x", "holdout_percent": "60"]).request()
        }
        #expect(PushForm.formField(forRequestField: "options.holdout") == "holdout_percent")
        #expect(PushForm.formField(forRequestField: "options.skip_unauthorized") == "skip_unauthorized")
        let scheduled = try #require(request.options?.scheduledAt)
        #expect(ISO8601DateFormatter().string(from: scheduled) == "2030-01-02T03:04:00Z")
    }

    @Test("everyone, aliases, registration ids, and a rate")
    func audiences() throws {
        #expect(try PushForm(fields: ["audience": "all", "body": "x"]).request().audience.all == true)
        let aliases = try PushForm(fields: ["audience": "aliases", "aliases": "user-1\nuser-2, user-3", "body": "x"])
            .request()
        #expect(aliases.audience.aliases == ["user-1", "user-2", "user-3"])
        let ids = try PushForm(fields: [
            "audience": "ids", "registration_ids": "7\n9", "body": "x", "throttle": "rate",
            "throttle_per_second": "500",
        ]).request()
        #expect(ids.audience.registrationIds == [7, 9])
        #expect(ids.options?.throttle?.perSecond == 500)
        let correction = try PushForm(fields: [
            "audience": "all", "body": "x", "replaces": "3f1c1a43-7f0c-4a59-9a43-5d1e5a0d2b11",
        ]).request()
        #expect(correction.options?.replaces == "3f1c1a43-7f0c-4a59-9a43-5d1e5a0d2b11")
    }

    @Test("what a form can get wrong is named by its field")
    func problems() {
        let cases: [([String: String], String)] = [
            (["audience": "tags", "tags_none": "x"], "tags_any"),
            (["audience": "aliases", "aliases": " \n "], "aliases"),
            (["audience": "ids", "registration_ids": "7, seven"], "registration_ids"),
            (["audience": "all", "badge": "three"], "badge"),
            (["audience": "all", "data": "[1, 2]"], "data"),
            (["audience": "all", "data": "{not json"], "data"),
            (["audience": "all", "scheduled_at": "tomorrow"], "scheduled_at"),
            (["audience": "all", "throttle": "rate"], "throttle_per_second"),
            (["audience": "everyone-ish"], "audience"),
        ]
        for (fields, field) in cases {
            #expect(throws: PushForm.Problem.self, "\(fields)") { try PushForm(fields: fields).request() }
            do {
                _ = try PushForm(fields: fields).request()
            } catch {
                #expect(error.field == field, "\(fields): \(error.message)")
            }
        }
    }

    @Test("the API's field names map to the form's")
    func fieldNames() {
        #expect(PushForm.formField(forRequestField: "notification.alert.title") == "title")
        #expect(PushForm.formField(forRequestField: "audience.tags.any") == "tags_any")
        #expect(PushForm.formField(forRequestField: "options.throttle.per_second") == "throttle_per_second")
        #expect(PushForm.formField(forRequestField: "something.else") == "audience")
    }

    @Test("form fields decode percent-escapes and plus signs")
    func formFields() {
        let fields = FormFields.parse("title=50%25+off&body=a%26b%3Dc&empty=&csrf=x%2By")
        #expect(fields == ["title": "50% off", "body": "a&b=c", "empty": "", "csrf": "x+y"])
    }
}

/// Pages render, with everything a user typed escaped.
@Suite("console: templates")
struct ConsoleTemplateTests {
    @Test("the sign-in page escapes what it shows")
    func escaping() {
        let html = ConsoleTemplates.render(
            "signIn", SignInPage(csrf: "token", error: "<script>alert(1)</script>", notice: nil))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!html.contains("<script>alert"))
        #expect(html.contains(#"name="csrf" value="token""#))
    }

    @Test("a push's page shows its outcome segments (APNs' and the long connection's) and reasons")
    func pushView() throws {
        let json = #"""
            {"id":"3f1c1a43-7f0c-4a59-9a43-5d1e5a0d2b11","state":"completed","push_type":"alert","priority":10,
             "priority_class":"campaign","paused":false,"audience_size":1000,"created_at":"2026-11-24T10:00:00Z",
             "counters":{"targeted":1000,"accepted":700,"delivered_online":100,"rejected":80,"expired":20,"canceled":0,"skipped":100,
                         "tokens_invalidated":80,"rejected_by_reason":{"Unregistered":50,"BadDeviceToken":30},
                         "skipped_by_reason":{"quiet_hours":40,"capped":60}}}
            """#
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let push = try decoder.decode(Components.Schemas.PushStatus.self, from: Data(json.utf8))
        let view = PushView(push)
        #expect(view.percent == "100.00")
        #expect(view.done == "1,000" && view.failed == "100")
        #expect(view.segments.map(\.name) == ["accepted", "online", "rejected", "expired", "canceled", "skipped"])
        #expect(view.segments.map(\.width) == ["70.000", "10.000", "8.000", "2.000", "0.000", "10.000"])
        #expect(view.segments.map(\.x) == ["0.000", "70.000", "80.000", "88.000", "90.000", "90.000"])
        #expect(
            view.outcomeSummary.contains("Accepted 700, delivered online 100, rejected 80"), "\(view.outcomeSummary)")
        #expect(view.outcomeSummary.contains("skipped 100 (capped 60, quiet_hours 40)"), "\(view.outcomeSummary)")
        #expect(
            view.skippedDetail
                == "Skipped, never sent: at the frequency cap (delivery policy) 60, in their quiet hours (delivery policy) 40"
        )
        #expect(view.reasons.map(\.reason) == ["Unregistered", "BadDeviceToken"])
        #expect(!view.live && view.finished)
        let actions = PushActions(push)
        #expect(!actions.pause && !actions.cancel && actions.recall && actions.correct)
    }
}

@Suite("console: figures")
struct ConsoleFigureTests {
    @Test("numbers are grouped by threes, times are UTC")
    func formatting() {
        #expect(PushView.number(0) == "0")
        #expect(PushView.number(999) == "999")
        #expect(PushView.number(1000) == "1,000")
        #expect(PushView.number(1_234_567) == "1,234,567")
        #expect(PushView.number(-12345) == "-12,345")
        #expect(PushView.time(Date(timeIntervalSince1970: 1_795_552_297)) == "2026-11-24 20:31:37 UTC")
    }
}

@Suite("console: multipart uploads")
struct MultipartBoundaryTests {
    @Test("a boundary is 1 to 70 characters (RFC 2046); anything else is not an upload form")
    func boundaryLength() {
        let longest = String(repeating: "b", count: 70)
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\(longest)") == longest)
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\"----x\"") == "----x")
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\(longest)b") == nil)
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=") == nil)
        #expect(MultipartForm.boundary(contentType: "application/json; boundary=x") == nil)
    }
}

@Suite("console: session look-ups")
struct SessionLookupGuardTests {
    @Test(
        "an unknown cookie is not looked up again for a minute; past the failures of a minute a source's unknown cookies are not looked up, its live sessions still are"
    )
    func lookUpsAreBounded() {
        let lookups = SessionLookupGuard(failuresPerMinute: 3, remembered: 100)
        let start = ContinuousClock.now
        lookups.succeeded("alice", now: start)
        #expect(lookups.mayLookUp("guess-1", from: "nat", now: start))
        lookups.failed("guess-1", from: "nat", now: start)
        #expect(!lookups.mayLookUp("guess-1", from: "elsewhere", now: start + .seconds(59)), "known to name nothing")
        #expect(lookups.mayLookUp("guess-1", from: "elsewhere", now: start + .seconds(60)))
        lookups.failed("guess-2", from: "nat", now: start)
        lookups.failed("guess-3", from: "nat", now: start)
        #expect(!lookups.mayLookUp("guess-4", from: "nat", now: start + .seconds(1)), "the source is past its failures")
        #expect(lookups.mayLookUp("alice", from: "nat", now: start + .seconds(1)), "a live session behind it is not")
        #expect(lookups.mayLookUp("guess-4", from: "elsewhere", now: start + .seconds(1)))
        #expect(lookups.mayLookUp("guess-4", from: "nat", now: start + .seconds(61)), "its minute is over")
    }
}

/// What templates read: page structs as dictionaries (ConsoleTemplates.lookupTree), with
/// Mustache's rules for nil kept.
@Suite("console: the templates' lookup tree")
struct ConsoleLookupTreeTests {
    struct Row {
        var name: String
        var reason: String?
        var when: Date
    }
    struct Page {
        var title: String
        var reason: String?
        var rows: [Row]
        var tags: [String]
        var nested: Row?
    }

    @Test("page structs become dictionaries, nil properties are left out, other values kept as they are")
    func tree() throws {
        let when = Date(timeIntervalSince1970: 1_800_000_000)
        let page = Page(
            title: "Devices", reason: "page reason",
            rows: [Row(name: "a", reason: "gone", when: when), Row(name: "b", reason: nil, when: when)],
            tags: ["vip", "news"], nested: Row(name: "c", reason: nil, when: when))
        let tree = try #require(ConsoleTemplates.lookupTree(page, pageModule: "HeraldConsoleTests") as? [String: Any])
        #expect(tree["title"] as? String == "Devices")
        #expect(tree["tags"] as? [String] == ["vip", "news"])
        let rows = try #require(tree["rows"] as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows[0]["reason"] as? String == "gone")
        #expect(rows[1].keys.sorted() == ["name", "when"])
        #expect(rows[1]["when"] as? Date == when)
        let nested = try #require(tree["nested"] as? [String: Any])
        #expect(nested["name"] as? String == "c")
    }

    @Test("a row's nil value is looked up in the page, as Mustache does with the struct itself")
    func renderedLikeMirror() throws {
        var library = MustacheLibrary()
        try library.register("{{title}}:{{#rows}}[{{name}} {{reason}}]{{/rows}}{{^nested}}!{{/nested}}", named: "t")
        let page = Page(
            title: "T", reason: "up",
            rows: [Row(name: "a", reason: "own", when: Date()), Row(name: "b", reason: nil, when: Date())],
            tags: [], nested: nil)
        let direct = library.render(page, withTemplate: "t")
        let tree = library.render(
            ConsoleTemplates.lookupTree(page, pageModule: "HeraldConsoleTests"), withTemplate: "t")
        #expect(direct == "T:[a own][b up]!")
        #expect(tree == direct)
    }

    @Test("a nested page struct and a Bool render as sections, as through Mirror")
    func sections() throws {
        struct Flagged {
            var on: Bool
            var off: Bool
            var nested: Row?
        }
        var library = MustacheLibrary()
        try library.register("{{#on}}on{{/on}}{{^off}} not off{{/off}}{{#nested}} {{name}}{{/nested}}", named: "t")
        let page = Flagged(on: true, off: false, nested: Row(name: "inner", reason: nil, when: Date()))
        let tree = library.render(
            ConsoleTemplates.lookupTree(page, pageModule: "HeraldConsoleTests"), withTemplate: "t")
        #expect(tree == "on not off inner")
        #expect(tree == library.render(page, withTemplate: "t"))
    }

    @Test("the console's own pages (the default module) become dictionaries")
    func consolePages() throws {
        let page = SignInPage(csrf: "token", error: nil, notice: "signed out")
        let tree = try #require(ConsoleTemplates.lookupTree(page) as? [String: Any])
        #expect(tree.keys.sorted() == ["csrf", "notice"])
    }
}
