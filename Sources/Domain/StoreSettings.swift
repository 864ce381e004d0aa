import Foundation

/// A tenant's settings for a store Berth registers beyond the App Store and Google Play, kept as the
/// catalog wrote them (`stores.<name>` in products.json): the store's own module decodes them
/// (``decode(_:)``), so a store added later needs no field of its own in ``Tenant``.
public struct StoreSettings: Codable, Sendable, Hashable {
    /// The JSON object, re-encoded with sorted keys.
    public let json: Data

    public init(json: Data) { self.json = json }

    public init(from decoder: any Decoder) throws {
        let value = try AnyJSON(from: decoder)
        guard case .object = value else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a store's settings are a JSON object"))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        json = try encoder.encode(value)
    }

    public func encode(to encoder: any Encoder) throws {
        try JSONDecoder().decode(AnyJSON.self, from: json).encode(to: encoder)
    }

    /// The settings as the store's own type.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: json) }
}

/// Any JSON value, kept only to carry a store's settings through the catalog.
private indirect enum AnyJSON: Codable, Hashable {
    case null, bool(Bool), number(Double), string(String), array([AnyJSON]), object([String: AnyJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AnyJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AnyJSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
