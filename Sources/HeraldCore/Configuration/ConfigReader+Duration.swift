import Configuration

extension ConfigReader {
    /// A setting given in whole milliseconds (keys end in `Ms`, variables in `_MS`), read once at
    /// start as a `Duration`, at least `minimum` milliseconds.
    func milliseconds(forKey key: ConfigKey, default defaultValue: Int, minimum: Int = 0) -> Duration {
        .milliseconds(max(minimum, int(forKey: key, default: defaultValue)))
    }
}
