/// Lower-case hexadecimal, the way APNs carries device tokens in its request paths: the one
/// encoder Herald uses (the sender per notification, the API for token prefixes, apns-sim and
/// the tools).
public enum Hexadecimal {
    /// `bytes` as lower-case hexadecimal digits, two per byte.
    @inlinable
    public static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        // Contiguous bytes (arrays, `Data`, buffers) are read through a pointer: `Data`'s own
        // iterator costs more per byte than the encoding (the sender's log lines and the API's
        // token prefixes encode tokens). Anything else is gathered into an array first.
        if let encoded = bytes.withContiguousStorageIfAvailable({ bytes in
            String(unsafeUninitializedCapacity: bytes.count * 2) { text in
                write(bytes, into: UnsafeMutableBufferPointer(rebasing: text[..<(bytes.count * 2)]))
                return bytes.count * 2
            }
        }) {
            return encoded
        }
        return encode(Array(bytes))
    }

    /// Whether `byte` is an ASCII hexadecimal digit (0-9, a-f, A-F).
    @inlinable
    public static func isDigit(_ byte: UInt8) -> Bool {
        (byte &- 48) < 10 || ((byte | 0x20) &- 97) < 6
    }

    /// The value (0...15) of the hex digit `byte`, in either case, or nil if it is not one.
    @inlinable
    public static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- 55
        default: nil
        }
    }

    /// The bytes `text` spells in hex digits (either case, two a byte), or nil when it is not an
    /// even number of hex digits. Empty text is no bytes.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// Writes `bytes` as hex digits into `text`, two per byte (`text` holds exactly that many).
    @inlinable
    public static func write(_ bytes: UnsafeBufferPointer<UInt8>, into text: UnsafeMutableBufferPointer<UInt8>) {
        precondition(text.count == bytes.count * 2, "two hex digits per byte")
        var index = 0
        for byte in bytes {
            text[index] = digit(byte >> 4)
            text[index + 1] = digit(byte & 0x0F)
            index += 2
        }
    }

    /// The ASCII digit of `nibble` (0...15), for writers that put digits straight into a buffer.
    @inlinable @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 48 + nibble : 87 + nibble }
}
