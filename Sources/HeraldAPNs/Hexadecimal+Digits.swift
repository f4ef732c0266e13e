import HeraldAPNsVocabulary
import HeraldHTTP2

extension Hexadecimal {
    /// Bytes written as hex digits straight into a request's header block (a device token from
    /// where a batch stores it, without a String per notification).
    ///
    /// - Important: `bytes` must stay valid while the value is used: make it inside the
    ///   `withUnsafe…` call that lends the pointer, and do not keep it.
    public struct Digits: HTTP2HeaderValue {
        public let bytes: UnsafeBufferPointer<UInt8>

        public init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        public func append(to storage: inout [UInt8]) {
            Self.append(bytes.count * 2, to: &storage) { Hexadecimal.write(bytes, into: $0) }
        }
    }
}
