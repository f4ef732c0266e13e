import NIOConcurrencyHelpers

/// A mutex ThreadSanitizer can see: a value behind a pthread lock (NIO's `NIOLock`), with
/// `Synchronization.Mutex`'s `init(_:)` and `withLock(_:)`.
///
/// It exists for `make test-tsan` only. The standard library's `Mutex` takes its lock inside the
/// prebuilt library on Linux, out of ThreadSanitizer's sight, so every access it guards reads as
/// a race (a ten-line program that appends to an array under a `Mutex` from four threads is
/// reported). Built with `-DHERALD_TSAN`, the modules `make test-tsan` checks (HeraldHTTP2,
/// HeraldAPNs, APNsSimulator) shadow `Mutex` with this type (their `Mutex+ThreadSanitizer.swift`);
/// every other build uses the standard one.
public final class VisibleMutex<Value>: @unchecked Sendable {
    // Safe: `value` is only touched while `lock` is held.
    private let lock = NIOLock()
    private var value: Value

    public init(_ value: sending Value) {
        self.value = value
    }

    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
