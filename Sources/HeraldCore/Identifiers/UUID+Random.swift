import Foundation

extension UUID {
    /// A new random (version 4) UUID, drawn from the system's generator in two 8-byte draws.
    ///
    /// The same kind of UUID as Foundation's `UUID()`, which on Linux opens, reads and closes
    /// `/dev/urandom` for every UUID: strace of herald-api under `make bench-api` showed one
    /// `openat` per UUID, two per accepted push (its id and the request's). Used where a request
    /// makes one.
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes: (UInt64, UInt64) = (generator.next(), generator.next())
        return withUnsafeMutableBytes(of: &bytes) { buffer in
            buffer[6] = (buffer[6] & 0x0F) | 0x40  // version 4
            buffer[8] = (buffer[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: buffer.loadUnaligned(as: uuid_t.self))
        }
    }
}
