#if HERALD_TSAN
import HeraldLocking

/// Under `make test-tsan` (built with `-DHERALD_TSAN`) this module's `Mutex` is one
/// ThreadSanitizer can see; see `VisibleMutex`.
typealias Mutex<Value> = VisibleMutex<Value>
#endif
