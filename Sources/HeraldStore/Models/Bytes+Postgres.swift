import NIOCore

extension Array where Element == UInt8 {
    /// The bytes as a `bytea` bind (a plain `[UInt8]` would bind as a `"char"[]`).
    var bytea: ByteBuffer { ByteBuffer(bytes: self) }
}

extension ByteBuffer {
    /// The readable bytes as an array.
    var bytes: [UInt8] { Array(readableBytesView) }
}
