import Foundation

/// The hot route's coders, for the microbenchmarks (Benchmarks/BerthMicro): the contract types are
/// internal to this module, so the benchmarks reach them through this SPI and nothing else does.
@_spi(Benchmarks)
public struct VerifyPurchaseCoders: Sendable {
    private let answer: VerifyPurchaseResponse

    /// - Parameter answer: a verify-purchase answer as Berth sent it (decoded once, re-encoded by `encodeAnswer`).
    public init(answer: Data) throws {
        self.answer = try JSONDecoder().decode(VerifyPurchaseResponse.self, from: answer)
    }

    /// Decodes a request body as `POST /api/verify-purchase` does (strict: a null field is refused); the product id.
    public func decodeRequest(_ body: Data) throws -> String {
        try JSONCoding.decode(VerifyPurchaseRequest.self, data: body).productId
    }

    /// Encodes the answer as the route does; its size in bytes.
    public func encodeAnswer() throws -> Int {
        try JSONCoding.encoder.encode(answer).count
    }
}
