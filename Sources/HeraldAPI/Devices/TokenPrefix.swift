import HeraldAPNsVocabulary

/// The range of device tokens that start with some hexadecimal digits: tokens from `lower`
/// (inclusive) to `upper` (exclusive; nil when the digits are all `f`, and no token is above).
/// An odd number of digits ends in half a byte: `abc` is 0xab 0xc0 up to 0xab 0xd0.
struct TokenPrefix: Equatable {
    init(lower: [UInt8], upper: [UInt8]?) {
        self.lower = lower
        self.upper = upper
    }

    var lower: [UInt8]
    var upper: [UInt8]?

    /// nil unless `hexadecimal` is 4 to 200 hexadecimal digits.
    init?(hexadecimal: String) {
        let digits = Array(hexadecimal.lowercased().utf8)
        guard (4...200).contains(digits.count) else { return nil }
        var nibbles: [UInt8] = []
        for digit in digits {
            guard let nibble = Hexadecimal.nibble(digit) else { return nil }
            nibbles.append(nibble)
        }
        lower = Self.bytes(nibbles)
        // The next prefix of the same length: add one to the last digit, carrying.
        var next = nibbles
        var index = next.count - 1
        while index >= 0 && next[index] == 15 {
            next[index] = 0
            index -= 1
        }
        if index < 0 {
            upper = nil
        } else {
            next[index] += 1
            upper = Self.bytes(Array(next[...index]))
        }
    }

    /// Nibbles as bytes, an odd last one in the high half of a last byte.
    private static func bytes(_ nibbles: [UInt8]) -> [UInt8] {
        stride(from: 0, to: nibbles.count, by: 2).map { index in
            nibbles[index] << 4 | (index + 1 < nibbles.count ? nibbles[index + 1] : 0)
        }
    }
}
