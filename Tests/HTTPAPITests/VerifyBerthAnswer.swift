import Foundation
#if canImport(CryptoKit)
import CryptoKit
#else
import Crypto
#endif

/// Whether a Berth answer is Berth's, unchanged, for this request: `pinnedKeySPKI` and `keyId` are
/// built into the app; `nonce` is the fresh X-Berth-Nonce the request sent; `path` is the request's
/// path with its query string as sent (`url.path` + `?` + `url.query`).
func verifyBerthAnswer(body: Data, status: Int, headers: [String: String], pinnedKeySPKI: String, keyId: String, nonce: String,
                       userId: String, method: String, path: String, now: Date = Date(), maxAge: TimeInterval = 300) -> Bool {
    func header(_ name: String) -> String { headers.first { $0.key.lowercased() == name.lowercased() }?.value ?? "" }
    func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    var signature = header("X-Berth-Signature").replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while signature.count % 4 != 0 { signature += "=" }
    guard header("X-Berth-Key-Id") == keyId, let signedAt = Int64(header("X-Berth-Signed-At")),
          abs(now.timeIntervalSince1970 - Double(signedAt) / 1000) <= maxAge,
          let keyBytes = Data(base64Encoded: pinnedKeySPKI), let key = try? P256.Signing.PublicKey(derRepresentation: keyBytes),
          let signatureBytes = Data(base64Encoded: signature),
          let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
    else { return false }
    let text = ["berth-answer-v1", keyId, nonce, String(signedAt), String(status), "\(method) \(path)", userId,
                base64URL(Data(SHA256.hash(data: body)))].joined(separator: "\n")
    return key.isValidSignature(ecdsa, for: Data(text.utf8))
}
