import Foundation
import HeraldAPIContract
import HeraldDomain
import HeraldStore

/// Reads a bulk import line by line: NDJSON (one registration object a line) or CSV (a header
/// line naming the columns). Good lines become rows; bad ones are counted, and the first 100
/// are kept with their line number and what is wrong.
struct DeviceImportParser: Sendable {
    enum Format { case ndjson, csv }

    static let reportedErrors = 100
    /// The longest line read (a registration with 100 tags of 64 characters is about 7 KiB): a
    /// longer one is rejected alone and skipped to its end, so memory stays bounded.
    static let maximumLineBytes = 65_536

    let format: Format
    let appID: UUID
    let bundleID: String
    private(set) var lines = 0
    private(set) var rejected = 0
    private(set) var errors: [(line: Int, message: String)] = []
    private var columns: [String]?
    /// The unfinished line so far.
    private var pending: [UInt8] = []
    /// Inside a line that was too long: bytes are dropped until its line break.
    private var skippingLongLine = false
    /// One decoder for every line (making one costs as much as decoding a short line).
    private let decoder = JSONDecoder()

    init(format: Format, appID: UUID, bundleID: String) {
        self.format = format
        self.appID = appID
        self.bundleID = bundleID
    }

    /// Feeds the next bytes of the body; returns the rows of the lines they completed. Each byte
    /// is scanned once, however the body is cut into chunks. Many lines are decoded by two tasks
    /// at once: decoding and checking a line costs far more than finding it, and an import has
    /// the machine's other core mostly to itself while PostgreSQL takes in the rows.
    mutating func feed(_ bytes: some Collection<UInt8>) async -> [ImportLine] {
        let lines = split(bytes)
        guard lines.count >= 64 else { return absorb(lines.map(decode)) }
        let half = lines.count / 2
        let parser = self
        async let head = lines[..<half].map(parser.decode)
        let tail = lines[half...].map(parser.decode)
        return absorb(await head + tail)
    }

    /// A line found in the body, not read yet: its number in the file and its bytes.
    struct Line: Sendable {
        var number: Int
        var bytes: ArraySlice<UInt8>
    }

    /// Cuts the body's bytes into lines: counts them, skips blank ones, reads the CSV header,
    /// and rejects a line too long on the spot.
    private mutating func split(_ bytes: some Collection<UInt8>) -> [Line] {
        var lines: [Line] = []
        var chunk = bytes[...]
        while !chunk.isEmpty {
            let newline = chunk.firstIndex(of: UInt8(ascii: "\n"))
            let piece = chunk[..<(newline ?? chunk.endIndex)]
            if skippingLongLine {
                if newline != nil { skippingLongLine = false }
            } else if pending.count + piece.count > Self.maximumLineBytes {
                if format == .csv && columns == nil {
                    columns = []
                    reject(line: 1, "the CSV header is longer than \(Self.maximumLineBytes) bytes")
                } else {
                    countLine()
                    reject(line: currentLineNumber, "the line is longer than \(Self.maximumLineBytes) bytes")
                }
                pending.removeAll()
                skippingLongLine = newline == nil
            } else if newline == nil {
                pending.append(contentsOf: piece)
            } else if pending.isEmpty {
                if let line = found(ArraySlice(piece)) { lines.append(line) }
            } else {
                pending.append(contentsOf: piece)
                if let line = found(pending[...]) { lines.append(line) }
                pending.removeAll(keepingCapacity: true)
            }
            guard let newline else { break }
            chunk = chunk[chunk.index(after: newline)...]
        }
        return lines
    }

    /// Counts the rows and rejected lines, in the lines' order; returns the rows.
    private mutating func absorb(_ results: [Result<ImportLine, LineError>]) -> [ImportLine] {
        var rows: [ImportLine] = []
        rows.reserveCapacity(results.count)
        for result in results {
            switch result {
            case .success(let row): rows.append(row)
            case .failure(let error): reject(line: error.line, error.message)
            }
        }
        return rows
    }

    /// What is wrong with one line.
    struct LineError: Error {
        var line: Int
        var message: String
    }

    /// The last line, when the body did not end with a line break.
    mutating func finish() -> [ImportLine] {
        defer { pending.removeAll() }
        guard !skippingLongLine, let line = found(pending[...]) else { return [] }
        return absorb([decode(line)])
    }

    /// A line to decode, with its number; nil for a blank line and the CSV header (read here).
    private mutating func found(_ line: ArraySlice<UInt8>) -> Line? {
        var bytes = line
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        if Self.isBlank(bytes) { return nil }
        if format == .csv && columns == nil {
            let names = CSV.fields(bytes).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let known: Set = [
                "token", "environment", "topic", "alias", "tags", "locale", "time_zone", "authorization_status",
            ]
            if let unknown = names.first(where: { !known.contains($0) }) {
                reject(
                    line: 1,
                    "the CSV header names an unknown column \"\(unknown)\"; columns are \(known.sorted().joined(separator: ", "))"
                )
                columns = []
            } else if !names.contains("token") || !names.contains("environment") {
                reject(line: 1, "the CSV header must name the columns token and environment")
                columns = []
            } else {
                columns = names
            }
            return nil
        }
        countLine()
        return Line(number: currentLineNumber, bytes: bytes)
    }

    /// Decodes and checks one line.
    private func decode(_ line: Line) -> Result<ImportLine, LineError> {
        do {
            let registration =
                try format == .csv ? csvRow(line.bytes) : ndjsonRow(line.bytes)
            return .success(ImportLine(number: line.number, registration: registration))
        } catch {
            return .failure(LineError(line: line.number, message: error.message))
        }
    }

    private mutating func countLine() { lines += 1 }

    /// The number of the line counted last, in the file (a CSV file's header is line 1).
    private var currentLineNumber: Int { format == .csv ? lines + 1 : lines }

    private mutating func reject(line: Int, _ message: String) {
        rejected += 1
        if errors.count < Self.reportedErrors { errors.append((line, message)) }
    }

    /// Whether a line holds only white space. (Its first byte that is not ASCII white space
    /// decides nearly every line; a line with other bytes is read as characters.)
    private static func isBlank(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first(where: { !(0x09...0x0D).contains($0) && $0 != 0x20 }) else { return true }
        if first < 0x80 { return false }
        return String(decoding: bytes, as: UTF8.self).allSatisfy(\.isWhitespace)
    }

    private func ndjsonRow(_ bytes: ArraySlice<UInt8>) throws(APIError) -> DeviceRegistration {
        if let registration = RegistrationLineScanner.scan(bytes) {
            return try DeviceInput.registration(registration, appID: appID, bundleID: bundleID)
        }
        let registration: Components.Schemas.DeviceRegistration
        do {
            registration = try decoder.decode(Components.Schemas.DeviceRegistration.self, from: Data(bytes))
        } catch let error as DecodingError {
            let described = ErrorResponseMiddleware.describe(error)
            throw .invalid(described.field ?? "line", described.message)
        } catch {
            throw .invalid("line", "not a JSON object")
        }
        if registration.previousToken != nil {
            throw .invalid(
                "previous_token", "an import does not hand tokens over: register a rotated token with POST /v1/devices")
        }
        return try DeviceInput.registration(registration, appID: appID, bundleID: bundleID)
    }

    private func csvRow(_ line: ArraySlice<UInt8>) throws(APIError) -> DeviceRegistration {
        guard let columns, !columns.isEmpty else { throw .invalid("line", "no usable CSV header") }
        let fields = CSV.fields(line)
        guard fields.count == columns.count else {
            throw .invalid("line", "\(fields.count) fields where the header names \(columns.count)")
        }
        var values: [String: String] = [:]
        for (name, value) in zip(columns, fields) where !value.isEmpty { values[name] = value }
        guard let environment = values["environment"].flatMap(Components.Schemas.Environment.init(rawValue:)) else {
            throw .invalid("environment", "environment is production or sandbox")
        }
        let tags = values["tags"].map { $0.split(separator: "|").map(String.init) }
        var registration = Components.Schemas.DeviceRegistration(
            token: values["token"] ?? "", environment: environment, topic: values["topic"], alias: values["alias"],
            tags: tags,
            locale: values["locale"], timeZone: values["time_zone"], country: values["country"],
            appVersion: values["app_version"], osVersion: values["os_version"])
        if let status = values["authorization_status"] {
            guard let known = Components.Schemas.AuthorizationStatus(rawValue: status) else {
                throw .invalid(
                    "authorization_status",
                    "authorization_status is one of authorized, provisional, ephemeral, denied, not_determined")
            }
            registration.authorizationStatus = known
        }
        return try DeviceInput.registration(registration, appID: appID, bundleID: bundleID)
    }
}

/// Just enough CSV (RFC 4180): commas, double-quoted fields with "" for a quote. Read byte by
/// byte (the quote and the comma are ASCII, so never part of another character's UTF-8).
enum CSV {
    static func fields(_ line: ArraySlice<UInt8>) -> [String] {
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var index = line.startIndex
        func endField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
        }
        while index < line.endIndex {
            let byte = line[index]
            index += 1
            if quoted {
                guard byte == UInt8(ascii: "\"") else {
                    field.append(byte)
                    continue
                }
                guard index < line.endIndex else {
                    quoted = false
                    continue
                }
                let next = line[index]
                index += 1
                if next == UInt8(ascii: "\"") {
                    field.append(next)
                } else {
                    quoted = false
                    if next == UInt8(ascii: ",") { endField() } else { field.append(next) }
                }
            } else if byte == UInt8(ascii: "\"") && field.isEmpty {
                quoted = true
            } else if byte == UInt8(ascii: ",") {
                endField()
            } else {
                field.append(byte)
            }
        }
        endField()
        return fields
    }
}
