import AsyncHTTPClient
import Foundation
import HTTPTypes
import Testing

/// herald-api's operations port: /metrics, /healthz and /readyz apart from the public API, which
/// by default no longer serves the counters of every app.
@Suite("herald-api's operations port")
struct OperationsPortTests {
    func get(_ url: String) async throws -> (status: Int, text: String) {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test("metrics and probes on the operations port; the public port answers 404 for /metrics, saying where they are")
    func operationsPort() async throws {
        let port = Int.random(in: 36_000..<37_000)
        try await withAPI(configure: {
            $0.metricsPort = port
            $0.metricsHost = "127.0.0.1"
            $0.metricsOnAPIPort = false
        }) { api in
            let hidden = try await api.call(.get, "/metrics", key: nil)
            #expect(hidden.status == .notFound)
            #expect(hidden.errorCode == "not_found")
            #expect(hidden.text.contains("HERALD_API_METRICS_PORT"))

            let base = "http://127.0.0.1:\(port)"
            var metrics = try await get(base + "/metrics")
            for _ in 0..<50 where metrics.status != 200 {
                try await Task.sleep(for: .milliseconds(100))
                metrics = try await get(base + "/metrics")
            }
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("# TYPE herald_api_requests_total counter"))
            // Latency per operation (the 404 above was getMetrics), and the process's own families.
            #expect(metrics.text.contains(#"herald_api_request_seconds_count{operation="getMetrics"} 1"#))
            #expect(metrics.text.contains(#"herald_build_info{service="herald-api""#))
            #expect(metrics.text.contains("process_resident_memory_bytes "))

            let live = try await get(base + "/healthz")
            #expect(live.status == 200)
            #expect(live.text.contains(#""status":"ok""#))
            let ready = try await get(base + "/readyz")
            #expect(ready.status == 200)
            let checks = try #require(
                (try JSONSerialization.jsonObject(with: Data(ready.text.utf8)) as? [String: Any])?["checks"]
                    as? [String: [String: String]])
            #expect(checks["postgres"]?["status"] == "pass")
            #expect(try await get(base + "/v1/apps").status == 404)
        }
    }
}
