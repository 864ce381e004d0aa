/// A booking's short reference, for people: 7 characters from an alphabet without 0, O, 1 and I
/// (`K7MX2QA`), so it survives being read over the phone. Unique within a tenant; accepted
/// wherever a booking id is, in any letter case and with spaces or dashes.
public enum BookingReference {
    public static let alphabet = Array("23456789ABCDEFGHJKLMNPQRSTUVWXYZ")
    public static let length = 7

    /// A new random reference (32^7 ≈ 3.4 × 10^10 of them; the store checks it is not taken).
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> String {
        String((0..<length).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] })
    }

    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// The reference `text` names (upper-cased, spaces and dashes dropped), or nil when it cannot be one.
    public static func normalized(_ text: some StringProtocol) -> String? {
        var characters: [Character] = []
        for character in text {
            // Spaces and dashes people type; `+`, a space in a form-encoded query string.
            if character == " " || character == "-" || character == "+" { continue }
            guard let ascii = character.asciiValue else { return nil }
            let upper = Character(Unicode.Scalar(ascii >= 0x61 && ascii <= 0x7A ? ascii - 0x20 : ascii))
            guard alphabet.contains(upper) else { return nil }
            characters.append(upper)
            guard characters.count <= length else { return nil }
        }
        return characters.count == length ? String(characters) : nil
    }
}
