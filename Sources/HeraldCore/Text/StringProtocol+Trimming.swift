extension StringProtocol {
    /// The text without the whitespace at either end, as a slice of it (no copy; Foundation's
    /// `trimmingCharacters(in:)` makes a new String).
    func trimmingWhitespace() -> Substring {
        let characters = Substring(self)
        let start = characters.firstIndex { !$0.isWhitespace } ?? characters.endIndex
        let end = characters.lastIndex { !$0.isWhitespace }.map { characters.index(after: $0) } ?? start
        return characters[start..<end]
    }
}
