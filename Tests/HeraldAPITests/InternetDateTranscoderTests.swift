import Foundation
import OpenAPIRuntime
import Testing

@testable import HeraldAPI

/// The API's dates are written by arithmetic; they must read exactly as the ISO 8601 formatter
/// wrote them.
@Suite("dates in API bodies")
struct InternetDateTranscoderTests {
    @Test(
        "the same text as OpenAPIRuntime's ISO 8601 transcoder, for dates from 1900 to 2200 with fractions of seconds")
    func sameAsFoundation() throws {
        let ours = InternetDateTranscoder()
        let standard = ISO8601DateTranscoder.iso8601
        var generator = SystemRandomNumberGenerator()
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -0.5), Date(timeIntervalSince1970: 86_399.999),
            Date(timeIntervalSince1970: 951_782_400),  // 2000-02-29
            Date(timeIntervalSince1970: 4_107_542_399.9),  // 2100-02-28T23:59:59
            Date(timeIntervalSince1970: -2_208_988_800),  // 1900-01-01
        ]
        for _ in 0..<20_000 {
            dates.append(
                Date(timeIntervalSince1970: Double.random(in: -2_208_988_800...7_258_118_400, using: &generator)))
        }
        for date in dates {
            let text = try ours.encode(date)
            #expect(text == (try standard.encode(date)), "\(date.timeIntervalSince1970)")
            #expect(try ours.decode(text) == (try standard.decode(text)))
        }
        #expect(try ours.encode(Date(timeIntervalSince1970: 1_795_000_000)) == "2026-11-18T11:06:40Z")
    }

    @Test(
        "reading: the written form by arithmetic, the same date as the ISO 8601 transcoder; every other text as it reads it"
    )
    func readsAsFoundation() throws {
        let ours = InternetDateTranscoder()
        let standard = ISO8601DateTranscoder.iso8601
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let date = Date(
                timeIntervalSince1970: Double.random(in: -2_208_988_800...7_258_118_400, using: &generator).rounded(
                    .down))
            let text = try standard.encode(date)
            #expect(InternetDateTranscoder.internetDate(text) == date, "\(text)")
        }
        // Dates the calendar lacks, times past the day, other forms: not read by arithmetic, and
        // answered exactly as before.
        for text in [
            "2026-02-29T00:00:00Z", "2024-02-29T12:00:00Z", "2026-04-31T00:00:00Z", "2026-11-29T24:00:00Z",
            "2026-11-29T12:00:00+01:00", "2026-11-29T12:00:00.5Z", "2026-11-29 12:00:00Z", "0000-01-01T00:00:00Z",
            "2026-13-01T00:00:00Z", "2026-11-29T12:60:00Z", "２０２６-11-29T12:00:00Z", "",
        ] {
            let fast = InternetDateTranscoder.internetDate(text)
            #expect(fast == nil || fast == (try? standard.decode(text)), "\(text)")
            #expect((try? ours.decode(text)) == (try? standard.decode(text)), "\(text)")
        }
        #expect(InternetDateTranscoder.internetDate("2024-02-29T12:00:00Z") != nil)
        #expect(InternetDateTranscoder.internetDate("2026-02-29T00:00:00Z") == nil)
    }
}
