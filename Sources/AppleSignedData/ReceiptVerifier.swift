import Crypto
import Foundation
import SwiftASN1
@_spi(DisableValidityCheck) import X509
import _CryptoExtras

/// A receipt whose PKCS#7 signature, certificate chain and app claims have been verified.
/// Only ``ReceiptVerifier`` creates values of this type.
public struct VerifiedReceipt: Sendable {
    public let receipt: AppReceipt
    /// Hex SHA-256 of the receipt's DER bytes: what may be stored and logged instead of the receipt.
    public let sha256: String
    /// `SHA-1` or `SHA-256`.
    public let digestAlgorithm: String
    public let trust: VerifiedSignedData<TransactionPayload>.Trust

    init(receipt: AppReceipt, sha256: String, digestAlgorithm: String, trust: VerifiedSignedData<TransactionPayload>.Trust) {
        self.receipt = receipt
        self.sha256 = sha256
        self.digestAlgorithm = digestAlgorithm
        self.trust = trust
    }
}

/// Verifies legacy App Store app receipts offline: the PKCS#7 RSA signature (SHA-1 or SHA-256), the
/// signer's chain to Apple Inc. Root Certificate with every certificate valid at the receipt's
/// creation date, then bundle id and environment. Apple's own server libraries do not check this
/// signature at all; Berth does, before it asks Apple anything.
///
/// The chain is Apple's receipt chain and nothing else: at most three certificates; the signer
/// carries Apple's receipt-signing marker (1.2.840.113635.100.6.11.1) and is issued by the one
/// embedded certificate named as its issuer, which carries the WWDR marker (1.2.840.113635.100.6.2.1)
/// and is issued by a configured root. Certificates Apple issues to developers (push, Developer ID,
/// pass signing) chain to Apple Inc. Root too, but lack these markers. Work per receipt is bounded:
/// its size, the number of certificates and a single candidate path.
public struct ReceiptVerifier: Sendable {
    public let roots: TrustedRoots

    /// The largest receipt accepted (DER bytes). Real receipts are a few KiB; a Sandbox receipt with
    /// hundreds of purchases stays well below this.
    public static let maximumReceiptBytes = 1 << 20

    public init(roots: TrustedRoots) {
        self.roots = roots
    }

    /// Trusts the bundled Apple Inc. Root Certificate only.
    public static func apple() throws(SignedDataError) -> ReceiptVerifier {
        ReceiptVerifier(roots: TrustedRoots([try TrustedRoots.appleIncRoot]))
    }

    /// Verifies a base64 receipt (whitespace and line breaks are ignored).
    public func verify(base64: String, expecting expectations: AppExpectations) async throws(SignedDataError) -> VerifiedReceipt {
        guard base64.utf8.count <= Self.maximumReceiptBytes * 2 else {
            throw SignedDataError(.malformed, "the receipt is larger than \(Self.maximumReceiptBytes) bytes")
        }
        let compact = base64.filter { !$0.isWhitespace }
        guard !compact.isEmpty, let data = Data(base64Encoded: compact) else {
            throw SignedDataError(.malformed, "the receipt is not base64")
        }
        return try await verify(der: Array(data), expecting: expectations)
    }

    public func verify(der bytes: [UInt8], expecting expectations: AppExpectations) async throws(SignedDataError) -> VerifiedReceipt {
        guard bytes.count <= Self.maximumReceiptBytes else {
            throw SignedDataError(.malformed, "the receipt is larger than \(Self.maximumReceiptBytes) bytes")
        }
        let signedData = try PKCS7SignedData(bytes: bytes)
        let receipt = try AppReceipt(payload: signedData.content)
        guard let created = receipt.creationDate else {
            throw SignedDataError(.malformed, "the receipt has no creation date")
        }
        guard let signerCertificate = signedData.signerCertificate else {
            throw SignedDataError(.badChain, "the receipt does not carry its signer's certificate")
        }
        let digestName = try Self.checkSignature(signedData, certificate: signerCertificate)

        let trust: VerifiedSignedData<TransactionPayload>.Trust
        if let environment = receipt.environment, environment.isLocalTesting {
            guard expectations.allowsLocalTesting else {
                throw SignedDataError(
                    .wrongEnvironment,
                    "\(environment) receipts are not signed by Apple and are accepted only where local testing is explicitly allowed"
                )
            }
            trust = .localTesting
        } else {
            trust = .chain(rootFingerprint: try await checkChain(signer: signerCertificate, others: signedData.certificates, at: created.date))
        }
        try Self.check(receipt, against: expectations)
        let hash = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        return VerifiedReceipt(receipt: receipt, sha256: hash, digestAlgorithm: digestName, trust: trust)
    }

    private static func checkSignature(_ signedData: PKCS7SignedData, certificate: Certificate) throws(SignedDataError) -> String {
        let signer = signedData.signer
        guard
            [PKCS7SignedData.OID.rsaEncryption, PKCS7SignedData.OID.sha1WithRSA, PKCS7SignedData.OID.sha256WithRSA].contains(
                signer.signatureAlgorithm
            )
        else {
            throw SignedDataError(.unsupportedAlgorithm, "receipt signature algorithm \(signer.signatureAlgorithm) is not RSA")
        }
        guard let key = _RSA.Signing.PublicKey(certificate.publicKey) else {
            throw SignedDataError(.badChain, "the receipt's signer certificate has no RSA key")
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signer.signature)
        let signedBytes = signer.signedAttributes.map { ArraySlice($0.setBytes) } ?? signedData.content
        let valid: Bool
        let name: String
        switch signer.digestAlgorithm {
        case PKCS7SignedData.OID.sha1:
            name = "SHA-1"
            if let expected = signer.signedAttributes?.messageDigest, Array(Insecure.SHA1.hash(data: signedData.content)) != expected {
                throw SignedDataError(.badSignature, "the receipt's content does not match its signed message digest")
            }
            valid = key.isValidSignature(signature, for: Insecure.SHA1.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        case PKCS7SignedData.OID.sha256:
            name = "SHA-256"
            if let expected = signer.signedAttributes?.messageDigest, Array(SHA256.hash(data: signedData.content)) != expected {
                throw SignedDataError(.badSignature, "the receipt's content does not match its signed message digest")
            }
            valid = key.isValidSignature(signature, for: SHA256.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        default:
            throw SignedDataError(.unsupportedAlgorithm, "receipt digest algorithm \(signer.digestAlgorithm) is neither SHA-1 nor SHA-256")
        }
        guard valid else { throw SignedDataError(.badSignature, "the receipt's RSA signature does not verify with its signer's key") }
        return name
    }

    /// Builds signer → its one embedded issuer → a configured root, each certificate valid at `time`.
    /// Cheap checks come first (names, Apple's marker extensions); the path builder then sees one
    /// candidate intermediate, so its work is a fixed handful of signature checks.
    private func checkChain(signer: Certificate, others: [Certificate], at time: Date) async throws(SignedDataError) -> String {
        guard signer.hasExtension(AppleCertificateOIDs.receiptSigningLeaf) else {
            throw SignedDataError(
                .missingAppleOID,
                "the receipt's signer lacks Apple's receipt-signing marker OID \(AppleCertificateOIDs.receiptSigningLeaf)"
            )
        }
        let issuers = others.filter { $0 != signer && $0.subject == signer.issuer }
        guard issuers.count == 1, let intermediate = issuers.first else {
            throw SignedDataError(
                .badChain,
                issuers.isEmpty
                    ? "the receipt does not carry its signer's issuer (\(signer.issuer))"
                    : "the receipt carries \(issuers.count) certificates named as its signer's issuer"
            )
        }
        guard intermediate.hasExtension(AppleCertificateOIDs.wwdrIntermediate) else {
            throw SignedDataError(
                .missingAppleOID,
                "the receipt's intermediate lacks Apple's WWDR marker OID \(AppleCertificateOIDs.wwdrIntermediate)"
            )
        }
        let anchors = roots.certificates.filter { $0.subject == intermediate.issuer }
        guard !anchors.isEmpty else {
            throw SignedDataError(.untrustedRoot, "the receipt's intermediate (\(intermediate.subject)) is not issued by a trusted root")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(anchors)) {
            RFC5280Policy.withValidityCheckDisabled()
            AppleReceiptExtensionsPolicy()
        }
        let result = await verifier.validate(leaf: signer, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            throw SignedDataError(.badChain, "the receipt's certificate chain does not verify (signatures, CA constraints or key usage)")
        }
        // Every certificate the receipt carries must be part of that chain (its copy of the root too):
        // nothing in the signed blob may be altered, even what the trust decision does not use.
        for certificate in others where !chain.contains(certificate) {
            throw SignedDataError(.untrustedRoot, "the receipt carries a certificate outside its trusted chain (\(certificate.subject))")
        }
        for (index, certificate) in chain.enumerated() {
            let role = index == 0 ? "signer" : (index == chain.count - 1 ? "root" : "intermediate")
            if time < certificate.notValidBefore {
                throw SignedDataError(
                    .certificateNotYetValid,
                    "the \(role) certificate was not yet valid when the receipt was created (\(time.formatted(.iso8601)))"
                )
            }
            if time > certificate.notValidAfter {
                throw SignedDataError(
                    .certificateExpired,
                    "the \(role) certificate had expired when the receipt was created (\(time.formatted(.iso8601)))"
                )
            }
        }
        var serializer = DER.Serializer()
        try? serializer.serialize(chain.root)
        return SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02x", $0) }.joined()
    }

    private static func check(_ receipt: AppReceipt, against expectations: AppExpectations) throws(SignedDataError) {
        if let expected = expectations.bundleId, receipt.bundleId != expected {
            throw SignedDataError(.wrongBundle, "expected bundle id \(expected), the receipt is for \(receipt.bundleId ?? "no bundle")")
        }
        if let accepted = expectations.environments, let environment = receipt.environment {
            let allowedLocal = expectations.allowsLocalTesting && environment.isLocalTesting
            guard accepted.contains(environment) || allowedLocal else {
                throw SignedDataError(
                    .wrongEnvironment,
                    "expected \(accepted.map(\.rawValue).sorted().joined(separator: " or ")) data, the receipt is \(receipt.receiptType ?? "?")"
                )
            }
        }
    }
}

/// Declares the Apple-specific extensions of receipt-signing certificates as understood.
struct AppleReceiptExtensionsPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        AppleCertificateOIDs.wwdrIntermediate, AppleCertificateOIDs.receiptSigningLeaf,
        [1, 2, 840, 113635, 100, 6, 2, 2], [1, 2, 840, 113635, 100, 6, 2, 3],
    ]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        chain.count == 3 ? .meetsPolicy : .failsToMeetPolicy(reason: "receipt chains have exactly three certificates")
    }
}
