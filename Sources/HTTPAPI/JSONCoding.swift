import Domain
import Foundation
import Hummingbird
import NIOCore

/// Reading request bodies and writing JSON responses with the API's conventions.
enum JSONCoding {
    static let bodyLimit = 64 * 1024

    static let encoder: JSONEncoder = BerthJSON.shared

    /// Decodes a JSON body of at most 64 KiB, mapping every failure to a 4xx with the offending field.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: bodyLimit)
        } catch {
            throw APIError(.contentTooLarge, .bodyTooLarge, "request bodies are limited to 64 KiB")
        }
        guard buffer.readableBytes > 0 else { throw APIError(.badRequest, .invalidJson, "the request body is empty; send a JSON object") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw APIError(.badRequest, .invalidJson, "the request body is not valid JSON")
        }
    }

    static func describe(_ error: DecodingError) -> APIError {
        func path(_ context: DecodingError.Context, _ last: CodingKey? = nil) -> String? {
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

    /// Parses an ISO 8601 date-time with or without fractional seconds.
    static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Self.format(date))
    }

    /// `2026-07-01T09:00:00.123Z`, from the whole milliseconds Berth stores (no float truncation).
    static func format(_ date: Date) -> String {
        let milliseconds = date.epochMilliseconds
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = milliseconds - seconds * 1000
        let whole = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
        return String(whole.dropLast()) + String(format: ".%03dZ", fraction)
    }
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
