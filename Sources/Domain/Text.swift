/// How free text from callers is trimmed and measured, everywhere: the same rules the OpenAPI
/// document states (`pattern: "\S"`, `minLength`, `maxLength`), so that a generic client and Berth
/// agree on what is blank and how long a value is.
public enum Text {
    /// White space: Unicode's White_Space property, plus the information separators U+001C–U+001F
    /// that many regex engines (Python's `\s`) also count as space.
    public static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || (0x1C...0x1F).contains(scalar.value)
    }

    /// The text without leading and trailing white space.
    public static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }

    /// The length JSON Schema's `maxLength` counts: Unicode code points.
    public static func length(_ text: String) -> Int { text.unicodeScalars.count }
}
