/// A request's id as a caller may send it (`X-Request-Id`), for herald-api and the console alike.
public enum RequestID {
    /// The caller's id if it is 1 to 128 letters, digits, `-`, `_`, `.` or `:` (anything else could
    /// forge log fields); nil otherwise.
    public static func acceptable(_ sent: String?) -> String? {
        guard let sent, (1...128).contains(sent.utf8.count) else { return nil }
        let allowed = sent.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: ":"):
                true
            default: false
            }
        }
        return allowed ? sent : nil
    }
}
