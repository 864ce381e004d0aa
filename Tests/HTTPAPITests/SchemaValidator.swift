import Foundation

/// Just enough JSON Schema (as used by contract/openapi.yaml) to check responses:
/// $ref, type, const, enum, required, properties, additionalProperties: false, items, oneOf,
/// pattern, minimum, minLength, maxLength, format: date-time. Schemas come from Yams, read as `JSON`.
struct SchemaValidator {
    let schemas: [String: JSON]

    func validate(_ value: JSON, against name: String) -> [String] {
        guard let schema = schemas[name] else { return ["no schema \(name)"] }
        return validate(value, schema: schema, path: name)
    }

    private func validate(_ value: JSON, schema: JSON, path: String) -> [String] {
        guard schema.members != nil else { return ["\(path): schema is not an object"] }
        if let reference = schema["$ref"].string {
            let name = String(reference.split(separator: "/").last ?? "")
            guard let target = schemas[name] else { return ["\(path): unknown $ref \(reference)"] }
            return validate(value, schema: target, path: path)
        }
        var problems: [String] = []
        if let options = schema["oneOf"].array {
            let matching = options.filter { validate(value, schema: $0, path: path).isEmpty }.count
            if matching != 1 { problems.append("\(path): matches \(matching) of oneOf") }
        }
        if case let constant = schema["const"], !constant.isNull, !Self.equal(value, constant) {
            problems.append("\(path): \(value) is not \(constant)")
        }
        if let options = schema["enum"].array, !options.contains(where: { Self.equal(value, $0) }) {
            problems.append("\(path): \(value) is not one of \(options)")
        }
        if let type = schema["type"].string, !Self.hasType(value, type) {
            return problems + ["\(path): \(value) is not of type \(type)"]
        }
        switch value {
        case .string(let text):
            if let pattern = schema["pattern"].string, text.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(path): \"\(text)\" does not match \(pattern)")
            }
            if let minimum = schema["minLength"].int, text.count < minimum { problems.append("\(path): shorter than \(minimum)") }
            if let maximum = schema["maxLength"].int, text.count > maximum { problems.append("\(path): longer than \(maximum)") }
            if schema["format"].string == "date-time",
                (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) == nil,
                (try? Date(text, strategy: .iso8601)) == nil
            {
                problems.append("\(path): \"\(text)\" is not an ISO 8601 date-time")
            }
        case .int, .double:
            if let minimum = schema["minimum"].double, let number = value.double, number < minimum {
                problems.append("\(path): \(number) is below \(minimum)")
            }
        case .object(let object):
            let properties = schema["properties"]
            for key in schema["required"].strings ?? [] where object[key] == nil {
                problems.append("\(path): missing required \(key)")
            }
            for (key, item) in object {
                if case let property = properties[key], !property.isNull {
                    problems += validate(item, schema: property, path: "\(path).\(key)")
                } else if schema["additionalProperties"].bool == false {
                    problems.append("\(path): unexpected property \(key)")
                }
            }
        case .array(let array):
            if case let items = schema["items"], !items.isNull {
                for (index, item) in array.enumerated() { problems += validate(item, schema: items, path: "\(path)[\(index)]") }
            }
        case .bool, .null:
            break
        }
        return problems
    }

    private static func hasType(_ value: JSON, _ type: String) -> Bool {
        switch (value, type) {
        case (.object, "object"), (.array, "array"), (.string, "string"), (.bool, "boolean"), (.int, "number"), (.double, "number"),
            (.null, "null"), (.int, "integer"):
            true
        case (.double(let number), "integer"): number.rounded() == number
        default: false
        }
    }

    /// A value against a `const` or `enum` member of the schema (numbers by value, 1 and 1.0 alike).
    private static func equal(_ value: JSON, _ expected: JSON) -> Bool {
        switch value {
        case .int, .double: value.double == expected.double
        default: value == expected
        }
    }
}

extension JSON {
    /// The structure: object keys (recursively) and kinds of values, not the values.
    var shape: String {
        switch self {
        case .object(let members): "{" + members.keys.sorted().map { "\($0):\(members[$0]?.shape ?? "")" }.joined(separator: ",") + "}"
        case .array(let elements): "[" + (elements.first?.shape ?? "") + "]"
        case .string: "s"
        case .int, .double: "n"
        case .bool: "b"
        case .null: "null"
        }
    }
}
