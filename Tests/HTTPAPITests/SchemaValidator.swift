import Foundation

/// A JSON value decoded strictly (a number is never a boolean).
enum JSONValue: Decodable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

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
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    static func parse(_ data: Data) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: data) }

    /// The structure: object keys (recursively) and kinds of values, not the values.
    var shape: String {
        switch self {
        case .object(let object): "{" + object.keys.sorted().map { "\($0):\(object[$0]!.shape)" }.joined(separator: ",") + "}"
        case .array(let array): "[" + (array.first?.shape ?? "") + "]"
        case .string: "s"
        case .number: "n"
        case .bool: "b"
        case .null: "null"
        }
    }
}

/// Just enough JSON Schema (as used by contract/openapi.yaml) to check responses:
/// $ref, type, const, enum, required, properties, additionalProperties: false, items, oneOf,
/// pattern, minimum, minLength, maxLength, format: date-time. Schemas come from Yams (native values).
struct SchemaValidator {
    let schemas: [String: Any]

    func validate(_ value: JSONValue, against name: String) -> [String] {
        guard let schema = schemas[name] else { return ["no schema \(name)"] }
        return validate(value, schema: schema, path: name)
    }

    private func validate(_ value: JSONValue, schema: Any, path: String) -> [String] {
        guard let schema = schema as? [String: Any] else { return ["\(path): schema is not an object"] }
        if let reference = schema["$ref"] as? String {
            let name = String(reference.split(separator: "/").last ?? "")
            guard let target = schemas[name] else { return ["\(path): unknown $ref \(reference)"] }
            return validate(value, schema: target, path: path)
        }
        var problems: [String] = []
        if let options = schema["oneOf"] as? [Any] {
            let matching = options.filter { validate(value, schema: $0, path: path).isEmpty }.count
            if matching != 1 { problems.append("\(path): matches \(matching) of oneOf") }
        }
        if let constant = schema["const"], !Self.equal(value, constant) { problems.append("\(path): \(value) is not \(constant)") }
        if let options = schema["enum"] as? [Any], !options.contains(where: { Self.equal(value, $0) }) {
            problems.append("\(path): \(value) is not one of \(options)")
        }
        if let type = schema["type"] as? String, !Self.hasType(value, type) {
            return problems + ["\(path): \(value) is not of type \(type)"]
        }
        switch value {
        case .string(let text):
            if let pattern = schema["pattern"] as? String, text.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(path): \"\(text)\" does not match \(pattern)")
            }
            if let minimum = schema["minLength"] as? Int, text.count < minimum { problems.append("\(path): shorter than \(minimum)") }
            if let maximum = schema["maxLength"] as? Int, text.count > maximum { problems.append("\(path): longer than \(maximum)") }
            if schema["format"] as? String == "date-time",
                (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) == nil,
                (try? Date(text, strategy: .iso8601)) == nil
            {
                problems.append("\(path): \"\(text)\" is not an ISO 8601 date-time")
            }
        case .number(let number):
            if let minimum = schema["minimum"] as? Int, number < Double(minimum) { problems.append("\(path): \(number) is below \(minimum)") }
        case .object(let object):
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for key in schema["required"] as? [String] ?? [] where object[key] == nil {
                problems.append("\(path): missing required \(key)")
            }
            for (key, item) in object {
                if let property = properties[key] {
                    problems += validate(item, schema: property, path: "\(path).\(key)")
                } else if schema["additionalProperties"] as? Bool == false {
                    problems.append("\(path): unexpected property \(key)")
                }
            }
        case .array(let array):
            if let items = schema["items"] {
                for (index, item) in array.enumerated() { problems += validate(item, schema: items, path: "\(path)[\(index)]") }
            }
        case .bool, .null:
            break
        }
        return problems
    }

    private static func hasType(_ value: JSONValue, _ type: String) -> Bool {
        switch (value, type) {
        case (.object, "object"), (.array, "array"), (.string, "string"), (.bool, "boolean"), (.number, "number"), (.null, "null"): true
        case (.number(let number), "integer"): number.rounded() == number
        default: false
        }
    }

    private static func equal(_ value: JSONValue, _ expected: Any) -> Bool {
        switch value {
        case .string(let text): (expected as? String) == text
        case .bool(let flag): (expected as? Bool) == flag
        case .number(let number): (expected as? Int).map { Double($0) == number } ?? ((expected as? Double) == number)
        default: false
        }
    }
}
