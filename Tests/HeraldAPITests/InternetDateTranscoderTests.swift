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
}
