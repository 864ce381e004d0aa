import AppleSignedData
import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority shaped like Apple's StoreKit PKI, generated in code:
/// a P-384 root, a P-384 intermediate carrying the WWDR marker OID and a P-256 leaf carrying the
/// receipt-signing OID. It signs JWS exactly like the App Store does.
///
/// A verifier trusts it only when its root is explicitly added to the trusted roots, so data it signs
/// can never pass for Apple's.
public struct TestCA: Sendable {
    /// What to generate; every field can be bent to build deliberately broken chains.
    public struct Options: Sendable {
        public var commonNamePrefix: String
        public var rootValidity: ClosedRange<Date>
        public var intermediateValidity: ClosedRange<Date>
        public var leafValidity: ClosedRange<Date>
        /// Put Apple's WWDR marker (1.2.840.113635.100.6.2.1) on the intermediate.
        public var intermediateHasAppleOID: Bool
        /// Put Apple's receipt-signing marker (1.2.840.113635.100.6.11.1) on the leaf.
        public var leafHasAppleOID: Bool

        /// Defaults: root and intermediate valid from ten years before `now` to twenty years after,
        /// the leaf from a year before to two years after; both marker OIDs present.
        public init(now: Date = Date(), commonNamePrefix: String = "Berth Test") {
            let year: TimeInterval = 365 * 24 * 3600
            self.commonNamePrefix = commonNamePrefix
            rootValidity = now.addingTimeInterval(-10 * year)...now.addingTimeInterval(20 * year)
            intermediateValidity = rootValidity
            leafValidity = now.addingTimeInterval(-year)...now.addingTimeInterval(2 * year)
            intermediateHasAppleOID = true
            leafHasAppleOID = true
        }
    }

    public let rootKey: P384.Signing.PrivateKey
    public let root: Certificate
    public let intermediateKey: P384.Signing.PrivateKey
    public let intermediate: Certificate
    public let leafKey: P256.Signing.PrivateKey
    public let leaf: Certificate

    public init(
        rootKey: P384.Signing.PrivateKey,
        root: Certificate,
        intermediateKey: P384.Signing.PrivateKey,
        intermediate: Certificate,
        leafKey: P256.Signing.PrivateKey,
        leaf: Certificate
    ) {
        self.rootKey = rootKey
        self.root = root
        self.intermediateKey = intermediateKey
        self.intermediate = intermediate
        self.leafKey = leafKey
        self.leaf = leaf
    }

    /// Generates a fresh CA with new keys.
    public static func generate(_ options: Options = Options()) throws -> TestCA {
        let rootKey = P384.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("\(options.commonNamePrefix) CA")
            CommonName("\(options.commonNamePrefix) Root CA - G3")
        }
        let rootPublic = Certificate.PublicKey(rootKey.publicKey)
        let root = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: rootPublic,
            notValidBefore: options.rootValidity.lowerBound,
            notValidAfter: options.rootValidity.upperBound,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: rootPublic)
            },
            issuerPrivateKey: .init(rootKey)
        )

        let intermediateKey = P384.Signing.PrivateKey()
        let intermediate = try makeIntermediate(
            key: intermediateKey,
            options: options,
            issuer: root,
            issuerKey: rootKey
        )
        let ca = TestCA(
            rootKey: rootKey,
            root: root,
            intermediateKey: intermediateKey,
            intermediate: intermediate,
            leafKey: P256.Signing.PrivateKey(),
            leaf: root
        )
        return try ca.withNewLeaf(
            validity: options.leafValidity,
            appleOID: options.leafHasAppleOID,
            commonNamePrefix: options.commonNamePrefix
        )
    }

    /// The same root and intermediate with a freshly generated leaf (new key, new certificate).
    public func withNewLeaf(
        validity: ClosedRange<Date>? = nil,
        appleOID: Bool = true,
        commonNamePrefix: String = "Berth Test"
    ) throws -> TestCA {
        let leafKey = P256.Signing.PrivateKey()
        let leafPublic = Certificate.PublicKey(leafKey.publicKey)
        let validity = validity ?? leaf.notValidBefore...leaf.notValidAfter
        let leafName = try DistinguishedName {
            CountryName("US")
            OrganizationName("\(commonNamePrefix) CA")
            OrganizationalUnitName("\(commonNamePrefix) Certification Authority")
            CommonName("\(commonNamePrefix) Prod ECC Mac App Store and iTunes Store Receipt Signing")
        }
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            SubjectKeyIdentifier(hash: leafPublic)
            AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: intermediate.publicKey).keyIdentifier)
        }
        if appleOID {
            try extensions.append(Certificate.Extension(oid: AppleCertificateOIDs.receiptSigningLeaf, critical: false, value: [0x05, 0x00]))
        }
        let newLeaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: leafPublic,
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: intermediate.subject,
            subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: extensions,
            issuerPrivateKey: .init(intermediateKey)
        )
        return TestCA(
            rootKey: rootKey,
            root: root,
            intermediateKey: intermediateKey,
            intermediate: intermediate,
            leafKey: leafKey,
            leaf: newLeaf
        )
    }

    /// The same root with a new intermediate (for example one without the WWDR marker, or expired).
    public func withNewIntermediate(_ options: Options) throws -> TestCA {
        let key = P384.Signing.PrivateKey()
        let newIntermediate = try Self.makeIntermediate(key: key, options: options, issuer: root, issuerKey: rootKey)
        let ca = TestCA(
            rootKey: rootKey,
            root: root,
            intermediateKey: key,
            intermediate: newIntermediate,
            leafKey: leafKey,
            leaf: leaf
        )
        return try ca.withNewLeaf(
            validity: options.leafValidity,
            appleOID: options.leafHasAppleOID,
            commonNamePrefix: options.commonNamePrefix
        )
    }

    private static func makeIntermediate(
        key: P384.Signing.PrivateKey,
        options: Options,
        issuer: Certificate,
        issuerKey: P384.Signing.PrivateKey
    ) throws -> Certificate {
        let publicKey = Certificate.PublicKey(key.publicKey)
        let name = try DistinguishedName {
            CountryName("US")
            OrganizationName("\(options.commonNamePrefix) CA")
            OrganizationalUnitName("G6")
            CommonName("\(options.commonNamePrefix) Worldwide Developer Relations Certification Authority")
        }
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: publicKey)
            AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuer.publicKey).keyIdentifier)
        }
        if options.intermediateHasAppleOID {
            try extensions.append(Certificate.Extension(oid: AppleCertificateOIDs.wwdrIntermediate, critical: false, value: [0x05, 0x00]))
        }
        return try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: publicKey,
            notValidBefore: options.intermediateValidity.lowerBound,
            notValidAfter: options.intermediateValidity.upperBound,
            issuer: issuer.subject,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: extensions,
            issuerPrivateKey: .init(issuerKey)
        )
    }

    /// The x5c header of this CA: leaf, intermediate, root as base64 DER.
    public var x5c: [String] {
        get throws { try [leaf, intermediate, root].map { try $0.derBase64() } }
    }

    /// The root certificate as PEM, for `--root` options and tenant configuration.
    public var rootPEM: String {
        get throws { try root.serializeAsPEM().pemString }
    }

    /// Trusted roots holding only this CA's root.
    public var trustedRoots: TrustedRoots { TrustedRoots([root]) }
}

extension Certificate {
    /// Standard base64 of the DER encoding, as carried in an x5c header.
    public func derBase64() throws -> String {
        var serializer = DER.Serializer()
        try serializer.serialize(self)
        return Data(serializer.serializedBytes).base64EncodedString()
    }
}
