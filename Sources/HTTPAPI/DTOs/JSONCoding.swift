import Domain
import Foundation
import Hummingbird
import NIOCore

/// A request body of Berth's own API: fields are omitted, never null, except `nullable` ones
/// (where null means "clear it"). Compatibility bodies (other products' shapes) do not adopt it.
protocol RefusesNull {
    static var nullable: Set<String> { get }
}

extension RefusesNull {
    static var nullable: Set<String> { [] }
}

/// Reading request bodies and writing JSON responses with the API's conventions.
enum JSONCoding {
    static let bodyLimit = 64 * 1024

    static let encoder: JSONEncoder = BerthJSON.shared

    /// Decodes a JSON body of at most 64 KiB, mapping every failure to a 4xx with the offending field.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        try await decode(type, from: request, emptyAs: nil)
    }

    /// The same, for bodies that may be left out: an empty body is `empty`.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, emptyAs empty: T?) async throws -> T {
        let buffer = try await body(request)
        if buffer.readableBytes == 0, let empty { return empty }
        guard buffer.readableBytes > 0 else { throw APIError(.badRequest, .invalidJson, "the request body is empty; send a JSON object") }
        return try decode(type, data: Data(buffer.readableBytesView))
    }

    /// The request's body, at most 64 KiB (413 `body_too_large` past it).
    static func body(_ request: Request) async throws -> ByteBuffer {
        var request = request
        do {
            return try await request.collectBody(upTo: bodyLimit)
        } catch {
            throw APIError(.contentTooLarge, .bodyTooLarge, "request bodies are limited to 64 KiB")
        }
    }

    /// Decodes a collected body (the part of `decode(_:from:)` after the body is read).
    static func decode<T: Decodable>(_ type: T.Type, data: Data) throws -> T {
        let strict = T.self as? any RefusesNull.Type
        let value: T
        do {
            value = try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            // A required field sent as null is named as such rather than as missing.
            if let strict { try refuseNulls(data, allowed: strict.nullable, fields: nil) }
            throw describe(error)
        } catch {
            throw APIError(.badRequest, .invalidJson, "the request body is not valid JSON")
        }
        // Only the body's own fields refuse null; unknown fields are ignored, null or not.
        // (The field list comes from reflection: only bodies that hold the token `null` pay for it.)
        if let strict, holdsNull(data) {
            try refuseNulls(data, allowed: strict.nullable, fields: Set(Mirror(reflecting: value).children.compactMap(\.label)))
        }
        return value
    }

    /// Whether the bytes hold the token `null` anywhere (a scan with memchr: Foundation's
    /// `Data.range(of:)` cost about 1 % of a verify-purchase's CPU on a 3 KB body).
    static func holdsNull(_ data: Data) -> Bool {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Bool in
            guard let base = raw.baseAddress, raw.count >= 4 else { return false }
            var offset = 0
            while offset <= raw.count - 4, let hit = memchr(base + offset, Int32(UInt8(ascii: "n")), raw.count - 3 - offset) {
                let at = base.distance(to: UnsafeRawPointer(hit))
                if raw[at + 1] == UInt8(ascii: "u"), raw[at + 2] == UInt8(ascii: "l"), raw[at + 3] == UInt8(ascii: "l") { return true }
                offset = at + 1
            }
            return false
        }
    }

    /// Berth's own bodies omit what they do not send: a `null` is refused (400 invalid_field) unless
    /// the field is one that null clears. Bodies without the token `null` skip the extra parse.
    private static func refuseNulls(_ data: Data, allowed: Set<String>, fields: Set<String>?) throws {
        guard holdsNull(data),
            let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any]
        else { return }
        if let field = object.filter({ $0.value is NSNull && !allowed.contains($0.key) && (fields?.contains($0.key) ?? true) }).keys.sorted().first {
            throw APIError(.badRequest, .invalidField, "\(field) cannot be null: omit it instead", field: field)
        }
    }

    static func describe(_ error: DecodingError) -> APIError {
        func path(_ context: DecodingError.Context, _ last: (any CodingKey)? = nil) -> String? {
            let keys = context.codingPath + (last.map { [$0] } ?? [])
            let text = keys.map(\.stringValue).joined(separator: ".")
            return text.isEmpty ? nil : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context, key) ?? key.stringValue
            return APIError(.badRequest, .missingField, "\(field) is required", field: field)
        case .typeMismatch(let type, let context):
            let field = path(context)
            return APIError(.badRequest, .invalidField, "\(field ?? "the body") must be \(describe(type))", field: field)
        case .valueNotFound(let type, let context):
            let field = path(context)
            return APIError(.badRequest, .invalidField, "\(field ?? "the body") must be \(describe(type)), not null", field: field)
        case .dataCorrupted(let context):
            if let field = path(context) {
                return APIError(.badRequest, .invalidField, "\(field): \(context.debugDescription)", field: field)
            }
            return APIError(.badRequest, .invalidJson, "the request body is not valid JSON")
        @unknown default:
            return APIError(.badRequest, .invalidJson, "the request body is not valid JSON")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Bool.Type: "a boolean"
        default: "a \(type)"
        }
    }

    static func response<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// An ISO 8601 instant in the API (UTC, milliseconds); decodes with or without fractional seconds.
struct APITime: Codable, Hashable, Sendable {
    var date: Date

    init(_ date: Date) { self.date = date }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let date = Self.parse(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be an ISO 8601 date-time such as 2026-07-01T09:00:00Z")
        }
        self.date = date
    }

    /// Parses an RFC 3339 date-time, exactly: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9
    /// digits (kept to the millisecond), then `Z` or an offset `±HH:MM`. Anything else (a trailing
    /// character, a missing zone, a 13th month, a 31st of April) is refused, as the OpenAPI pattern
    /// `ISODateTime` says.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ character: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == character else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2), expect(0x54),
            let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2)
        else { return nil }
        var milliseconds = 0
        if expect(0x2E) {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            let count = index - start
            guard (1...9).contains(count) else { return nil }
            for (position, byte) in bytes[start..<min(start + 3, index)].enumerated() {
                milliseconds += Int(byte - 0x30) * [100, 10, 1][position]
            }
        }
        var offsetMinutes = 0
        if !expect(0x5A) {
            guard index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D else { return nil }
            let sign = bytes[index] == 0x2D ? -1 : 1
            index += 1
            guard let offsetHours = digits(2), expect(0x3A), let offsetMinute = digits(2), offsetHours <= 23, offsetMinute <= 59 else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMinute)
        }
        guard index == bytes.count, (1...12).contains(month), hour <= 23, minute <= 59, second <= 60 else { return nil }  // 60: a leap second
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...monthDays).contains(day) else { return nil }
        // Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(milliseconds) / 1000)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Self.format(date))
    }

    /// `2026-07-01T09:00:00.123Z`, from the whole milliseconds Berth stores (no float truncation).
    static func format(_ date: Date) -> String { BerthJSON.timestamp(date) }
}

/// A date-time in whole seconds (`2026-10-14T12:00:00Z`): the compatibility shapes' format, which
/// Swift's default `.iso8601` decoding strategy reads (it refuses fractional seconds).
struct SecondsTime: Codable, Hashable, Sendable {
    var date: Date

    init(_ date: Date) { self.date = date }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let date = APITime.parse(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be an ISO 8601 date-time such as 2026-07-01T09:00:00Z")
        }
        self.date = date
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(BerthJSON.secondsTimestamp(date))
    }
}
