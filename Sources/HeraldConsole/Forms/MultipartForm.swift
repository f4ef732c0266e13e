import Foundation

/// A `multipart/form-data` body (the credential upload form: a file and a few fields), split
/// into its parts. Only what browsers send is understood: CRLF line ends, a boundary from the
/// `Content-Type`, each part with a `Content-Disposition: form-data; name="…"` header.
struct MultipartForm {
    struct Part {
        var name: String
        var filename: String?
        var content: [UInt8]
    }

    var parts: [Part]

    /// The text of field `name`, or nil.
    func text(_ name: String) -> String? {
        parts.first { $0.name == name }.map { String(decoding: $0.content, as: UTF8.self) }
    }

    /// The content of file field `name`, or nil when no file was chosen.
    func file(_ name: String) -> [UInt8]? {
        guard let part = parts.first(where: { $0.name == name }), part.filename?.isEmpty == false else { return nil }
        return part.content
    }

    /// The boundary a `Content-Type: multipart/form-data; boundary=…` names.
    static func boundary(contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                // RFC 2046: 1 to 70 characters; a longer one is not a form a browser sends.
                let boundary = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return (1...70).contains(boundary.utf8.count) ? boundary : nil
            }
        }
        return nil
    }

    /// Parses `body`; nil when it is not multipart data with `boundary`.
    init?(body: [UInt8], boundary: String) {
        let delimiter = Array("--\(boundary)".utf8)
        var parts: [Part] = []
        var sections = Self.split(body, on: delimiter)
        guard sections.count >= 2 else { return nil }
        sections.removeFirst()  // the preamble
        for var section in sections {
            if section.starts(with: Array("--".utf8)) { break }  // the closing delimiter
            if section.starts(with: [13, 10]) { section.removeFirst(2) }
            if section.suffix(2) == [13, 10] { section.removeLast(2) }
            guard let headerEnd = Self.firstRange(of: [13, 10, 13, 10], in: section) else { return nil }
            let headers = String(decoding: section[..<headerEnd.lowerBound], as: UTF8.self)
            let content = Array(section[headerEnd.upperBound...])
            var name: String?
            var filename: String?
            for line in headers.components(separatedBy: "\r\n")
            where line.lowercased().hasPrefix("content-disposition:") {
                name = Self.parameter("name", in: line)
                filename = Self.parameter("filename", in: line)
            }
            guard let name else { return nil }
            parts.append(Part(name: name, filename: filename, content: content))
        }
        self.parts = parts
    }

    private static func parameter(_ key: String, in line: String) -> String? {
        for piece in line.split(separator: ";") {
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("\(key)=\"") else { continue }
            return String(trimmed.dropFirst(key.count + 2).dropLast())
        }
        return nil
    }

    private static func firstRange(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index <= haystack.endIndex - needle.count {
            if haystack[index..<index + needle.count].elementsEqual(needle) { return index..<index + needle.count }
            index += 1
        }
        return nil
    }

    private static func split(_ bytes: [UInt8], on delimiter: [UInt8]) -> [ArraySlice<UInt8>] {
        var sections: [ArraySlice<UInt8>] = []
        var rest = bytes[...]
        while let range = firstRange(of: delimiter, in: rest) {
            sections.append(rest[rest.startIndex..<range.lowerBound])
            rest = rest[range.upperBound...]
        }
        sections.append(rest)
        return sections
    }
}
