import SwiftASN1
import X509

/// Apple's marker extensions on StoreKit signing certificates.
public enum AppleCertificateOIDs {
    /// Carried by the Apple Worldwide Developer Relations intermediate (WWDR G6).
    public static let wwdrIntermediate: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// Carried by the App Store receipt-signing leaf certificate.
    public static let receiptSigningLeaf: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
}

/// Declares Apple's marker extensions as understood, so the chain builder does not refuse them when
/// they are critical; their presence is checked by ``SignedDataVerifier`` itself.
struct AppleMarkerExtensionsPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        AppleCertificateOIDs.wwdrIntermediate, AppleCertificateOIDs.receiptSigningLeaf,
    ]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        chain.count == 3 ? .meetsPolicy : .failsToMeetPolicy(reason: "StoreKit chains have exactly three certificates")
    }
}

extension Certificate {
    func hasExtension(_ oid: ASN1ObjectIdentifier) -> Bool {
        extensions.contains { $0.oid == oid }
    }
}
