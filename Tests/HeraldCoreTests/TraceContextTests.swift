import HeraldCore
import Testing

/// W3C `traceparent` as herald-api reads it from callers and every process passes it on.
@Suite("W3C trace context")
struct TraceContextTests {
    @Test("a well-formed traceparent is read; its child keeps trace id and flags with a new parent id")
    func wellFormed() throws {
        let trace = try #require(TraceContext(traceparent: " 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01 "))
        #expect(trace.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(trace.parentID == "00f067aa0ba902b7")
        #expect(trace.traceparent == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        let child = trace.child()
        #expect(child.traceID == trace.traceID && child.flags == "01" && child.parentID != trace.parentID)
        #expect(TraceContext(traceparent: child.traceparent) == child)
        // A later version is read by its first four fields.
        #expect(
            TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")?.traceID
                == trace.traceID)
    }

    @Test(
        "malformed values are refused, so the caller starts a new trace",
        arguments: [
            "", "00", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ])
    func malformed(_ value: String) {
        #expect(TraceContext(traceparent: value) == nil)
    }

    @Test("a started trace is well formed and new each time")
    func started() {
        let first = TraceContext.start()
        #expect(TraceContext(traceparent: first.traceparent) == first)
        #expect(TraceContext.start().traceID != first.traceID)
    }
}
