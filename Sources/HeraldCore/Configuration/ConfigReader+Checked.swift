import Configuration
import Foundation

extension ConfigReader {
    /// A setting that names one of `Choice`'s cases (compared without regard to case); nil when
    /// it is unset or empty.
    /// - Throws: ``SettingError`` naming `variable`, the value and the cases allowed.
    func choice<Choice: RawRepresentable & CaseIterable>(
        forKey key: ConfigKey, variable: String, as: Choice.Type
    ) throws(SettingError) -> Choice? where Choice.RawValue == String {
        guard let text = string(forKey: key), !text.isEmpty else { return nil }
        if let found = Choice.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) {
            return found
        }
        throw SettingError(
            """
            \(variable) is "\(text)"; it must be one of \
            \(Choice.allCases.map(\.rawValue).joined(separator: ", "))
            """)
    }

    /// A setting that names a file Herald must be able to read at start; nil when it is unset.
    /// - Throws: ``SettingError`` naming `variable` and the path when the file is missing or
    ///   unreadable.
    func readableFile(forKey key: ConfigKey, variable: String) throws(SettingError) -> String? {
        guard let path = string(forKey: key), !path.isEmpty else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw SettingError("cannot read \(variable) \(path): it is missing or unreadable")
        }
        return path
    }
}
