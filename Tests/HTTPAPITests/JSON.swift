import Foundation
import Testing

/// A JSON value as the HTTP tests read answers and write request bodies: each read names the type it
/// expects (`answer["booking"]["status"].string`), a member that is absent reads as `.null`, and a
/// read of the wrong type is `nil` rather than a cast that silently fits. Numbers keep their integer
/// form when they have one, so ids and minor units compare exactly.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// Parses `data`; anything that is not JSON throws.
    static func parse(_ data: Data) throws -> JSON {
        try JSONDecoder().decode(JSON.self, from: data)
    }

    /// Parses `text`; anything that is not JSON throws.
    static func parse(_ text: String) throws -> JSON {
        try parse(Data(text.utf8))
    }

    /// The member `key` of an object (`.null` when absent or when this is not an object); setting one
    /// makes this an object.
    subscript(key: String) -> JSON {
        get {
            if case .object(let members) = self { return members[key] ?? .null }
            return .null
        }
        set {
            var members = self.members ?? [:]
            members[key] = newValue
            self = .object(members)
        }
    }

    /// The element at `index` of an array (`.null` when out of range or when this is not an array).
    subscript(index: Int) -> JSON {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return .null
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var int64: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: Int64(value)
        default: nil
        }
    }

    var int: Int? { int64.flatMap { Int(exactly: $0) } }

    var double: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    var array: [JSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The members, when this is an object.
    var members: [String: JSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// This value when it is an object (so `try #require(answer["refund"].object)` insists on one).
    var object: JSON? { members == nil ? nil : self }

    /// The strings of an array of strings (`nil` when this is not an array or an element is not a string).
    var strings: [String]? {
        guard let elements = array else { return nil }
        let strings = elements.compactMap(\.string)
        return strings.count == elements.count ? strings : nil
    }

    var isNull: Bool { self == .null }

    /// This object with the members of `other` added (those of `other` win).
    func merging(_ other: JSON) -> JSON {
        .object((members ?? [:]).merging(other.members ?? [:]) { $1 })
    }

    /// The bytes of this value (a request body, a recorded example).
    func data(sortedKeys: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        if sortedKeys { encoder.outputFormatting = [.sortedKeys] }
        return try encoder.encode(self)
    }

    /// Compact JSON text.
    var text: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}

extension JSON: Codable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let elements): try container.encode(elements)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSON: CustomStringConvertible {
    var description: String { text }
}

extension JSON {
    /// A value from Foundation's form (what Yams reads from the OpenAPI document); anything else is `nil`.
    init?(foundation value: Any) {
        switch value {
        case let value as JSON: self = value
        case is NSNull: self = .null
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .int(Int64(value))
        case let value as Int64: self = .int(value)
        case let value as Int32: self = .int(Int64(value))
        case let value as Double: self = .double(value)
        case let value as String: self = .string(value)
        case let value as Date: self = .string(value.formatted(.iso8601))
        case let value as [Any]:
            var elements: [JSON] = []
            for element in value {
                guard let element = JSON(foundation: element) else { return nil }
                elements.append(element)
            }
            self = .array(elements)
        case let value as [String: Any]:
            var members: [String: JSON] = [:]
            for (key, element) in value {
                guard let element = JSON(foundation: element) else { return nil }
                members[key] = element
            }
            self = .object(members)
        default: return nil
        }
    }
}

/// Request bodies written as literals: `let body: JSON = ["resourceId": "gozzo-5m", "units": 2]`, with
/// values computed by the test given as `.string(iso(start))`, `.int(id)`.
extension JSON: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByStringInterpolation,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    init(dictionaryLiteral elements: (String, JSON)...) { self = .object(Dictionary(elements) { $1 }) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
    init(stringLiteral value: String) { self = .string(value) }
    init(stringInterpolation: DefaultStringInterpolation) { self = .string(String(stringInterpolation: stringInterpolation)) }
    init(integerLiteral value: Int64) { self = .int(value) }
    init(floatLiteral value: Double) { self = .double(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(nilLiteral: ()) { self = .null }

    static func int(_ value: Int) -> JSON { .int(Int64(value)) }
    static func strings(_ values: [String]) -> JSON { .array(values.map(JSON.string)) }
}
