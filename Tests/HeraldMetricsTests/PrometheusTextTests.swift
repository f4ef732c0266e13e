import HeraldMetrics
import Testing

@Suite("Prometheus text exposition (pure)")
struct PrometheusTextTests {
    @Test("families, labelled samples and a histogram, in the format's syntax")
    func exposition() {
        var text = PrometheusText()
        text.single("herald_batches_total", .counter, help: "Job batches finished.", value: 3)
        text.family("herald_notifications_total", .counter, help: "By outcome.")
        text.sample("herald_notifications_total", ["outcome": "rejected", "reason": "Unregistered"], value: 2)
        var histogram = Histogram(bounds: [1, 2.5])
        histogram.observe(0.5)
        histogram.observe(2)
        histogram.observe(9)
        histogram.write(to: &text, name: "herald_latency", help: "Latency.")
        #expect(
            text.text == """
                # HELP herald_batches_total Job batches finished.
                # TYPE herald_batches_total counter
                herald_batches_total 3
                # HELP herald_notifications_total By outcome.
                # TYPE herald_notifications_total counter
                herald_notifications_total{outcome="rejected",reason="Unregistered"} 2
                # HELP herald_latency Latency.
                # TYPE herald_latency histogram
                herald_latency_bucket{le="1"} 1
                herald_latency_bucket{le="2.5"} 2
                herald_latency_bucket{le="+Inf"} 3
                herald_latency_sum 11.5
                herald_latency_count 3

                """)
    }

    @Test("label values Herald does not control are escaped: a reason with a quote cannot break the page")
    func escaping() {
        var text = PrometheusText()
        text.family("apns_sim_requests_total", .counter, help: "Requests\nanswered \\ by reason.")
        text.sample("apns_sim_requests_total", ["reason": #"Bad"Reason\x"# + "\nnext"], value: 1)
        #expect(
            text.text == #"""
                # HELP apns_sim_requests_total Requests\nanswered \\ by reason.
                # TYPE apns_sim_requests_total counter
                apns_sim_requests_total{reason="Bad\"Reason\\x\nnext"} 1

                """#)
        #expect(PrometheusText.escapeLabelValue("Unregistered") == "Unregistered")
    }
}
