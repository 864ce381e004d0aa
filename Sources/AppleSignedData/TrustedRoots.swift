import Foundation
import SwiftASN1
import X509

/// The root certificates a verifier anchors chains to.
public struct TrustedRoots: Sendable {
    public let certificates: [Certificate]
    /// DER encodings, for exact matching against the root a JWS header carries.
    let derEncodings: Set<[UInt8]>

    public init(_ certificates: [Certificate]) {
        self.certificates = certificates
        var ders = Set<[UInt8]>()
        for certificate in certificates {
            var serializer = DER.Serializer()
            if (try? serializer.serialize(certificate)) != nil { ders.insert(serializer.serializedBytes) }
        }
        derEncodings = ders
    }

    /// Apple Root CA - G3, the anchor of every StoreKit 2 signature, bundled with this library.
    public static var appleRootCAG3: Certificate {
        get throws(SignedDataError) { try bundled(PackageResources.AppleRootCA_G3_pem, "AppleRootCA-G3.pem") }
    }

    /// Apple Inc. Root Certificate, the anchor of legacy PKCS#7 app receipts, bundled with this library.
    public static var appleIncRoot: Certificate {
        get throws(SignedDataError) { try bundled(PackageResources.AppleIncRootCertificate_pem, "AppleIncRootCertificate.pem") }
    }

    /// The default for JWS: Apple Root CA - G3 only.
    public static func apple() throws(SignedDataError) -> TrustedRoots {
        TrustedRoots([try appleRootCAG3])
    }

    /// These roots plus more.
    public func adding(_ more: [Certificate]) -> TrustedRoots {
        TrustedRoots(certificates + more)
    }

    /// Reads certificates from a PEM file (one or more certificates) or a DER file.
    public static func load(contentsOf url: URL) throws(SignedDataError) -> [Certificate] {
        let bytes: Data
        do { bytes = try Data(contentsOf: url) } catch {
            throw SignedDataError(.invalidRoot, "cannot read \(url.path): \(error.localizedDescription)")
        }
        return try parse(bytes, source: url.lastPathComponent)
    }

    /// Parses PEM (one or more `CERTIFICATE` blocks) or a single DER certificate.
    public static func parse(_ bytes: Data, source: String = "root") throws(SignedDataError) -> [Certificate] {
        if let text = String(data: bytes, encoding: .utf8), text.contains("-----BEGIN") {
            do {
                let documents = try PEMDocument.parseMultiple(pemString: text)
                let certificates = try documents.filter { $0.discriminator == "CERTIFICATE" }
                    .map { try Certificate(pemDocument: $0) }
                guard !certificates.isEmpty else {
                    throw SignedDataError(.invalidRoot, "\(source) holds no CERTIFICATE block")
                }
                return certificates
            } catch let error as SignedDataError {
                throw error
            } catch {
                throw SignedDataError(.invalidRoot, "\(source) is not a valid PEM certificate: \(error)")
            }
        }
        do {
            return [try Certificate(derEncoded: Array(bytes))]
        } catch {
            throw SignedDataError(.invalidRoot, "\(source) is neither PEM nor a DER certificate")
        }
    }

    /// A root compiled into the library (SwiftPM's embedInCode): no resource bundle to deploy.
    private static func bundled(_ bytes: [UInt8], _ name: String) throws(SignedDataError) -> Certificate {
        guard let certificate = try parse(Data(bytes), source: name).first else {
            throw SignedDataError(.invalidRoot, "bundled resource \(name) is empty")
        }
        return certificate
    }
}
