import Foundation
import HeraldCore
import HeraldMetrics
import Testing

@Suite("Every process's own metrics")
struct ProcessMetricsTests {
    /// The value of the sample line that starts with `prefix`.
    func value(_ text: String, _ prefix: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    @Test("build info, CPU, resident memory, descriptors and start time, read from this process")
    func processFamilies() throws {
        // Some CPU and a few descriptors of our own, so the figures have something to show.
        var sum = 0.0
        for index in 0..<2_000_000 { sum += Double(index).squareRoot() }
        #expect(sum > 0)
        let text = ProcessMetrics.prometheusText(service: "herald-test", version: "9.9.9-test")
        #expect(text.contains(#"herald_build_info{service="herald-test",version="9.9.9-test",swift="#))
        #expect(try #require(value(text, "process_cpu_seconds_total")) > 0)
        #expect(try #require(value(text, "process_resident_memory_bytes")) > 1_000_000)
        let open = try #require(value(text, "process_open_fds"))
        #expect(open >= 3 && open <= (value(text, "process_max_fds") ?? .infinity))
        let started = try #require(value(text, "process_start_time_seconds"))
        #expect(started <= Date().timeIntervalSince1970 && started > Date().timeIntervalSince1970 - 86_400)
        #expect(text.contains("# TYPE process_cpu_seconds_total counter"))
    }

    @Test("histograms of one family told apart by a label")
    func labelledHistograms() {
        var text = PrometheusText()
        text.family("herald_api_request_seconds", .histogram, help: "By operation.")
        var fast = Histogram(bounds: [0.01])
        fast.observe(0.002)
        fast.writeSamples(to: &text, name: "herald_api_request_seconds", label: ("operation", "createPush"))
        #expect(
            text.text.contains(
                #"""
                herald_api_request_seconds_bucket{operation="createPush",le="0.01"} 1
                herald_api_request_seconds_bucket{operation="createPush",le="+Inf"} 1
                herald_api_request_seconds_sum{operation="createPush"} 0.002
                herald_api_request_seconds_count{operation="createPush"} 1
                """#))
    }
}
