import Foundation
import HeraldAPNs
import HeraldDomain
import HeraldStore
import StoreTestSupport
import Testing

@Suite("Audiences from PostgreSQL")
struct AudienceTests {
    @Test("a stream let go of after one page, with the thread waiting to hand over more, stops and frees cleanly")
    func streamClosedEarly() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(200)
            let selection = AudienceSelection(appID: env.app.id, audience: .everyone)
            // The thread fills its pages ahead and waits for room; the reader goes away after a
            // page or two (what a pause or a fan-out held at its window does), the thread caught
            // at different points. A semaphore freed with fewer permits than it was made with
            // traps in libdispatch and ends this process.
            for attempt in 0..<20 {
                var iterator: AudienceStream.AsyncIterator? = env.audience.stream(selection, after: 0, pageSize: 10)
                    .makeAsyncIterator()
                for _ in 0...(attempt % 2) {
                    let page = try await iterator?.next()
                    #expect(page?.count == 10)
                }
                iterator = nil
            }
            // The stream of a later fan-out still reads everything.
            var count = 0
            for try await page in env.audience.stream(selection, after: 0, pageSize: 10) { count += page.count }
            #expect(count == 200)
        }
    }

    /// Devices 0..<40 of the app: tags by number (even → "even", multiple of 3 → "three",
    /// multiple of 5 → "five"), aliases "user-N/4"; plus devices of another app with the same
    /// tags and aliases, and two invalidated devices.
    @Test func selectorsCombineAndNeverLeakAcrossApps() async throws {
        try await withCenterEnvironment { env in
            let shape: @Sendable (Int) -> (tags: [String], alias: String?) = { number in
                var tags: [String] = []
                if number % 2 == 0 { tags.append("even") }
                if number % 3 == 0 { tags.append("three") }
                if number % 5 == 0 { tags.append("five") }
                return (tags, "user-\(number / 4)")
            }
            let ids = try await env.register(40, shape: shape)
            try await env.register(40, app: env.otherApp, seed: 2, shape: shape)
            let sandbox = try await env.register(3, seed: 3, environment: .sandbox) { _ in (["even"], nil) }
            // Invalidated devices are never targeted.
            try await markInvalid([ids[0]], reason: "BadDeviceToken", client: env.database, logger: env.logger)
            try await markInvalid([ids[6]], reason: "Unregistered", client: env.database, logger: env.logger)
            let active = Set(ids.indices.filter { $0 != 0 && $0 != 6 })

            // Quotes, a backslash and non-ASCII text in an alias and a tag: the COPY statement
            // carries values as literals, and these must select exactly this device.
            let odd = try await env.devices.register(
                DeviceRegistration(
                    appID: env.app.id, token: CenterEnvironment.token(seed: 7, number: 1), environment: .production,
                    topic: env.app.bundleID, alias: "o'brien \\ 'x'); --ü", tags: ["it's", "ü"]))

            func numbers(_ audience: PushAudience) async throws -> Set<Int> {
                let selection = AudienceSelection(appID: env.app.id, audience: audience)
                var cursor: Int64 = 0
                var found: [AudienceTarget] = []
                // Small pages, to walk the keyset.
                while true {
                    let page = try await env.audience.page(selection, after: cursor, limit: 7).targets
                    guard let last = page.last else { break }
                    #expect(page.map(\.deviceID) == page.map(\.deviceID).sorted())
                    found += page
                    cursor = last.deviceID
                }
                let count = try await env.audience.count(selection)
                #expect(Int(count) == found.count)
                #expect(Set(found.map(\.deviceID)).count == found.count, "no device twice")
                // The fan-out's COPY stream, in pages of 5, reads exactly the same devices.
                var streamed: [AudienceTarget] = []
                for try await page in env.audience.stream(selection, after: 0, pageSize: 5) {
                    #expect(page.count <= 5)
                    streamed += page.targets
                }
                #expect(streamed == found)
                return Set(
                    found.map(\.deviceID).map { id in
                        id == odd.id
                            ? -1
                            : ids.firstIndex(of: id) ?? (sandbox.contains(id) ? 1000 + sandbox.firstIndex(of: id)! : -2)
                    })
            }

            #expect(try await numbers(.everyone) == active.union([1000, 1001, 1002, -1]))
            #expect(try await numbers(PushAudience(aliases: ["o'brien \\ 'x'); --ü"])) == [-1])
            #expect(try await numbers(PushAudience(tags: .init(any: ["it's"]))) == [-1])
            #expect(try await numbers(PushAudience(tags: .init(all: ["ü", "it's"]))) == [-1])
            #expect(try await numbers(PushAudience(all: true, environment: .production)) == active.union([-1]))
            #expect(try await numbers(PushAudience(all: true, environment: .sandbox)) == [1000, 1001, 1002])
            #expect(
                try await numbers(PushAudience(registrationIDs: [ids[1], ids[2], ids[6], sandbox[0]])) == [1, 2, 1000])
            #expect(try await numbers(PushAudience(aliases: ["user-2", "user-9"])) == [8, 9, 10, 11, 36, 37, 38, 39])
            #expect(
                try await numbers(PushAudience(registrationIDs: [ids[1]], aliases: ["user-9"])) == [1, 36, 37, 38, 39])
            let evens = active.filter { $0 % 2 == 0 }
            #expect(try await numbers(PushAudience(tags: .init(any: ["even"]), environment: .production)) == evens)
            #expect(
                try await numbers(PushAudience(tags: .init(any: ["three", "five"])))
                    == active.filter { $0 % 3 == 0 || $0 % 5 == 0 })
            #expect(
                try await numbers(PushAudience(tags: .init(all: ["even", "three"]))) == active.filter { $0 % 6 == 0 })
            #expect(
                try await numbers(PushAudience(tags: .init(all: ["even", "three", "three"])))
                    == active.filter { $0 % 6 == 0 })
            #expect(
                try await numbers(PushAudience(all: true, tags: .init(none: ["even"])))
                    == active.filter { $0 % 2 != 0 }.union([-1]))
            #expect(
                try await numbers(PushAudience(tags: .init(any: ["three"], all: ["even"], none: ["five"])))
                    == active.filter { $0 % 6 == 0 && $0 % 5 != 0 })
            #expect(
                try await numbers(PushAudience(aliases: ["user-3", "user-4"], tags: .init(none: ["even"]))) == [
                    13, 15, 17, 19,
                ])
            #expect(try await numbers(PushAudience(tags: .init(any: ["no-such-tag"]))).isEmpty)
            // An audience that selects nothing reaches nobody.
            #expect(try await numbers(PushAudience()).isEmpty)
        }
    }
}
