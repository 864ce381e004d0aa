import AppleSignedData
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A certificate authority shaped like the one behind legacy App Store receipts (RSA root →
/// RSA WWDR intermediate carrying 1.2.840.113635.100.6.2.1 → RSA receipt-signing leaf carrying
/// 1.2.840.113635.100.6.11.1) that signs PKCS#7 app receipts. Its receipts verify only where its
/// root is explicitly trusted. Broken variants (no marker OIDs, extra or cross-signed certificates,
/// signed attributes without a digest) exist for rejection tests.
public struct TestReceiptCA: Sendable {
    public let rootKey: _RSA.Signing.PrivateKey
    public let root: Certificate
    public let intermediateKey: _RSA.Signing.PrivateKey
    public let intermediate: Certificate
    public let leafKey: _RSA.Signing.PrivateKey
    public let leaf: Certificate

    /// The digest of the receipt signature: old receipts use SHA-1, newer SHA-256.
    public enum Digest: Sendable { case sha1, sha256 }

    /// CMS signed attributes of the SignerInfo. Apple's receipts carry none (the signature covers the
    /// content); RFC 5652 allows them, and then they must carry the content's message digest.
    public enum SignedAttributes: Sendable {
        /// No signed attributes: the signature covers the receipt content.
        case none
        /// content-type and message-digest attributes; the signature covers them.
        case withMessageDigest
        /// Only a content-type attribute (broken: the content is then not covered by the signature).
        case withoutMessageDigest
    }

    /// Generates RSA-2048 keys and certificates valid from ten years before `now` to ten after.
    public static func generate(now: Date = Date(), commonNamePrefix: String = "Berth Test") throws -> TestReceiptCA {
        let year: TimeInterval = 365 * 24 * 3600
        let validity = now.addingTimeInterval(-10 * year)...now.addingTimeInterval(10 * year)
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("\(commonNamePrefix) Inc.")
            OrganizationalUnitName("\(commonNamePrefix) Certification Authority")
            CommonName("\(commonNamePrefix) Root CA")
        }
        let root = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(rootKey.publicKey),
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey)
        )
        let intermediateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let intermediateName = try DistinguishedName {
            CountryName("US")
            OrganizationName("\(commonNamePrefix) Inc.")
            OrganizationalUnitName("G5")
            CommonName("\(commonNamePrefix) Worldwide Developer Relations Certification Authority")
        }
        let intermediate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(intermediateKey.publicKey),
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: rootName,
            subject: intermediateName,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Self.intermediateExtensions(appleOID: true),
            issuerPrivateKey: .init(rootKey)
        )
        let leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let leaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(leafKey.publicKey),
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: intermediateName,
            subject: try DistinguishedName {
                CountryName("US")
                OrganizationName("\(commonNamePrefix) Inc.")
                CommonName("\(commonNamePrefix) Mac App Store and iTunes Store Receipt Signing")
            },
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Self.leafExtensions(appleOID: true),
            issuerPrivateKey: .init(intermediateKey)
        )
        return TestReceiptCA(rootKey: rootKey, root: root, intermediateKey: intermediateKey, intermediate: intermediate, leafKey: leafKey, leaf: leaf)
    }

    public init(
        rootKey: _RSA.Signing.PrivateKey,
        root: Certificate,
        intermediateKey: _RSA.Signing.PrivateKey,
        intermediate: Certificate,
        leafKey: _RSA.Signing.PrivateKey,
        leaf: Certificate
    ) {
        self.rootKey = rootKey
        self.root = root
        self.intermediateKey = intermediateKey
        self.intermediate = intermediate
        self.leafKey = leafKey
        self.leaf = leaf
    }

    /// Trusted roots holding only this CA's root.
    public var trustedRoots: TrustedRoots { TrustedRoots([root]) }

    /// Signs `receipt` as a DER PKCS#7 SignedData carrying leaf, intermediate and root.
    /// - Parameters:
    ///   - signingKey: sign with another key (for bad-signature tests); default the leaf's.
    ///   - signer: the certificate the SignerInfo names; default the leaf.
    ///   - certificates: the certificates carried; default leaf, intermediate and root.
    ///   - signedAttributes: CMS signed attributes; default none, as in Apple's receipts.
    public func signReceipt(
        _ receipt: AppReceipt,
        digest: Digest = .sha256,
        signingKey: _RSA.Signing.PrivateKey? = nil,
        signer: Certificate? = nil,
        certificates: [Certificate]? = nil,
        signedAttributes: SignedAttributes = .none
    ) throws -> [UInt8] {
        let payload = try ReceiptEncoding.payload(receipt)
        let key = signingKey ?? leafKey
        let signer = signer ?? leaf
        let digestOID: ASN1ObjectIdentifier
        let contentDigest: [UInt8]
        switch digest {
        case .sha1:
            digestOID = [1, 3, 14, 3, 2, 26]
            contentDigest = Array(Insecure.SHA1.hash(data: payload))
        case .sha256:
            digestOID = [2, 16, 840, 1, 101, 3, 4, 2, 1]
            contentDigest = Array(SHA256.hash(data: payload))
        }
        let attributes = try ReceiptEncoding.signedAttributes(signedAttributes, contentDigest: contentDigest)
        // The signature covers the content, or the attributes re-tagged as a SET when there are any.
        var signedBytes = attributes ?? payload
        if attributes != nil { signedBytes[0] = 0x31 }
        let signature: _RSA.Signing.RSASignature =
            switch digest {
            case .sha1: try key.signature(for: Insecure.SHA1.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
            case .sha256: try key.signature(for: SHA256.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
            }
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { contentInfo in
            try contentInfo.serialize([1, 2, 840, 113549, 1, 7, 2] as ASN1ObjectIdentifier)
            try contentInfo.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { explicit in
                try explicit.appendConstructedNode(identifier: .sequence) { signedData in
                    try signedData.serialize(1)
                    try signedData.appendConstructedNode(identifier: .set) { try ReceiptEncoding.algorithm(digestOID, into: &$0) }
                    try signedData.appendConstructedNode(identifier: .sequence) { encapsulated in
                        try encapsulated.serialize([1, 2, 840, 113549, 1, 7, 1] as ASN1ObjectIdentifier)
                        try encapsulated.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) {
                            try $0.serialize(ASN1OctetString(contentBytes: ArraySlice(payload)))
                        }
                    }
                    try signedData.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { carried in
                        for certificate in certificates ?? [leaf, intermediate, root] { try carried.serialize(certificate) }
                    }
                    try signedData.appendConstructedNode(identifier: .set) { signerInfos in
                        try signerInfos.appendConstructedNode(identifier: .sequence) { signerInfo in
                            try signerInfo.serialize(1)
                            try signerInfo.appendConstructedNode(identifier: .sequence) { sid in
                                try sid.serialize(signer.issuer)
                                try sid.serialize(signer.serialNumber.bytes)
                            }
                            try ReceiptEncoding.algorithm(digestOID, into: &signerInfo)
                            if let attributes { signerInfo.serializeRawBytes(attributes) }
                            try ReceiptEncoding.algorithm([1, 2, 840, 113549, 1, 1, 1], into: &signerInfo)
                            try signerInfo.serialize(ASN1OctetString(contentBytes: ArraySlice(signature.rawRepresentation)))
                        }
                    }
                }
            }
        }
        return serializer.serializedBytes
    }

    /// The same keys and names with the intermediate and/or the leaf re-issued without Apple's marker
    /// OIDs: shaped like a certificate Apple issues to developers (push, Developer ID, pass signing).
    public func withoutAppleOIDs(leaf stripLeaf: Bool = true, intermediate stripIntermediate: Bool = true) throws -> TestReceiptCA {
        let newIntermediate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: intermediate.publicKey,
            notValidBefore: intermediate.notValidBefore,
            notValidAfter: intermediate.notValidAfter,
            issuer: intermediate.issuer,
            subject: intermediate.subject,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Self.intermediateExtensions(appleOID: !stripIntermediate),
            issuerPrivateKey: .init(rootKey)
        )
        let newLeaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: leaf.publicKey,
            notValidBefore: leaf.notValidBefore,
            notValidAfter: leaf.notValidAfter,
            issuer: leaf.issuer,
            subject: leaf.subject,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Self.leafExtensions(appleOID: !stripLeaf),
            issuerPrivateKey: .init(intermediateKey)
        )
        return TestReceiptCA(
            rootKey: rootKey,
            root: root,
            intermediateKey: intermediateKey,
            intermediate: newIntermediate,
            leafKey: leafKey,
            leaf: newLeaf
        )
    }

    /// A hostile receipt: `keyCount`² certificates that all share one subject and cross-sign each other
    /// (certificate (i, j) holds key i and is signed by key j), and a signer (this CA's leaf key, with
    /// the marker OID) issued under that subject. A path builder that tries every candidate issuer
    /// explores on the order of keyCount! paths.
    public func crossSignedReceipt(_ receipt: AppReceipt, keyCount: Int) throws -> [UInt8] {
        let name = try DistinguishedName {
            CountryName("US")
            OrganizationName("Mesh")
            CommonName("Mesh Certification Authority")
        }
        let keys = (0..<keyCount).map { _ in P256.Signing.PrivateKey() }
        let validity = leaf.notValidBefore...leaf.notValidAfter
        var mesh: [Certificate] = []
        for subjectKey in keys {
            for issuerKey in keys {
                mesh.append(
                    try Certificate(
                        version: .v3,
                        serialNumber: .init(),
                        publicKey: .init(subjectKey.publicKey),
                        notValidBefore: validity.lowerBound,
                        notValidAfter: validity.upperBound,
                        issuer: name,
                        subject: name,
                        signatureAlgorithm: .ecdsaWithSHA256,
                        extensions: try Self.intermediateExtensions(appleOID: true),
                        issuerPrivateKey: .init(issuerKey)
                    )
                )
            }
        }
        let signer = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: leaf.publicKey,
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: name,
            subject: leaf.subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Self.leafExtensions(appleOID: true),
            issuerPrivateKey: .init(keys[0])
        )
        return try signReceipt(receipt, signer: signer, certificates: [signer] + mesh)
    }

    static func intermediateExtensions(appleOID: Bool) throws -> Certificate.Extensions {
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        if appleOID {
            try extensions.append(Certificate.Extension(oid: AppleCertificateOIDs.wwdrIntermediate, critical: false, value: [0x05, 0x00]))
        }
        return extensions
    }

    static func leafExtensions(appleOID: Bool) throws -> Certificate.Extensions {
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
        }
        if appleOID {
            try extensions.append(Certificate.Extension(oid: AppleCertificateOIDs.receiptSigningLeaf, critical: false, value: [0x05, 0x00]))
        }
        return extensions
    }
}

/// DER encoding of receipt payloads (the inverse of what ``ReceiptVerifier`` decodes).
enum ReceiptEncoding {
    /// The SignerInfo's `[0] IMPLICIT SET OF Attribute`, or nil for none.
    static func signedAttributes(_ kind: TestReceiptCA.SignedAttributes, contentDigest: [UInt8]) throws -> [UInt8]? {
        if case .none = kind { return nil }
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { attributes in
            try attributes.appendConstructedNode(identifier: .sequence) { attribute in
                try attribute.serialize([1, 2, 840, 113549, 1, 9, 3] as ASN1ObjectIdentifier)
                try attribute.appendConstructedNode(identifier: .set) { try $0.serialize([1, 2, 840, 113549, 1, 7, 1] as ASN1ObjectIdentifier) }
            }
            if case .withMessageDigest = kind {
                try attributes.appendConstructedNode(identifier: .sequence) { attribute in
                    try attribute.serialize([1, 2, 840, 113549, 1, 9, 4] as ASN1ObjectIdentifier)
                    try attribute.appendConstructedNode(identifier: .set) {
                        try $0.serialize(ASN1OctetString(contentBytes: ArraySlice(contentDigest)))
                    }
                }
            }
        }
        return coder.serializedBytes
    }

    static func algorithm(_ oid: ASN1ObjectIdentifier, into coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { algorithm in
            try algorithm.serialize(oid)
            try algorithm.serialize(ASN1Null())
        }
    }

    static func payload(_ receipt: AppReceipt) throws -> [UInt8] {
        var attributes: [(Int, [UInt8])] = []
        func add(_ type: Int, utf8 value: String?) throws { if let value { attributes.append((type, try der(ASN1UTF8String(value)))) } }
        func add(_ type: Int, date value: AppleTimestamp?) throws {
            if let value { attributes.append((type, try der(ASN1IA5String(value.date.formatted(.iso8601))))) }
        }
        try add(ReceiptField.receiptType, utf8: receipt.receiptType)
        try add(ReceiptField.bundleId, utf8: receipt.bundleId)
        try add(ReceiptField.applicationVersion, utf8: receipt.applicationVersion)
        try add(ReceiptField.originalApplicationVersion, utf8: receipt.originalApplicationVersion)
        try add(ReceiptField.creationDate, date: receipt.creationDate)
        try add(ReceiptField.expirationDate, date: receipt.expirationDate)
        for entry in receipt.inAppPurchases { attributes.append((ReceiptField.inAppPurchase, try inApp(entry))) }
        return try set(attributes)
    }

    static func inApp(_ entry: AppReceipt.InAppPurchase) throws -> [UInt8] {
        var attributes: [(Int, [UInt8])] = []
        func add(_ type: Int, utf8 value: String?) throws { if let value { attributes.append((type, try der(ASN1UTF8String(value)))) } }
        func add(_ type: Int, date value: AppleTimestamp?) throws {
            if let value { attributes.append((type, try der(ASN1IA5String(value.date.formatted(.iso8601))))) }
        }
        func add(_ type: Int, integer value: Int64?) throws {
            if let value {
                var coder = DER.Serializer()
                try coder.serialize(value)
                attributes.append((type, coder.serializedBytes))
            }
        }
        try add(ReceiptField.quantity, integer: entry.quantity.map(Int64.init))
        try add(ReceiptField.productId, utf8: entry.productId)
        try add(ReceiptField.transactionId, utf8: entry.transactionId)
        try add(ReceiptField.originalTransactionId, utf8: entry.originalTransactionId)
        try add(ReceiptField.purchaseDate, date: entry.purchaseDate)
        try add(ReceiptField.originalPurchaseDate, date: entry.originalPurchaseDate)
        try add(ReceiptField.subscriptionExpirationDate, date: entry.subscriptionExpirationDate)
        try add(ReceiptField.cancellationDate, date: entry.cancellationDate)
        try add(ReceiptField.webOrderLineItemId, integer: entry.webOrderLineItemId)
        try add(ReceiptField.isTrialPeriod, integer: entry.isTrialPeriod.map { $0 ? 1 : 0 })
        try add(ReceiptField.isInIntroOfferPeriod, integer: entry.isInIntroOfferPeriod.map { $0 ? 1 : 0 })
        try add(ReceiptField.promotionalOfferIdentifier, utf8: entry.promotionalOfferIdentifier)
        return try set(attributes)
    }

    private static func der(_ value: some DERSerializable) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.serialize(value)
        return coder.serializedBytes
    }

    private static func set(_ attributes: [(Int, [UInt8])]) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .set) { set in
            for (type, value) in attributes {
                try set.appendConstructedNode(identifier: .sequence) { attribute in
                    try attribute.serialize(type)
                    try attribute.serialize(1)
                    try attribute.serialize(ASN1OctetString(contentBytes: ArraySlice(value)))
                }
            }
        }
        return coder.serializedBytes
    }
}

extension AppReceipt {
    /// A plausible receipt with one consumable purchase, for tests.
    public static func testReceipt(
        bundleId: String,
        productId: String,
        transactionId: String = TestIDs.transactionId(),
        receiptType: String = "ProductionSandbox",
        created: Date = Date()
    ) -> AppReceipt {
        var entry = AppReceipt.InAppPurchase()
        entry.quantity = 1
        entry.productId = productId
        entry.transactionId = transactionId
        entry.originalTransactionId = transactionId
        entry.purchaseDate = AppleTimestamp(millisecondsSince1970: created.epochSeconds * 1000)
        entry.originalPurchaseDate = entry.purchaseDate
        return AppReceipt(
            receiptType: receiptType,
            bundleId: bundleId,
            applicationVersion: "1",
            originalApplicationVersion: "1",
            creationDate: AppleTimestamp(millisecondsSince1970: created.epochSeconds * 1000),
            inAppPurchases: [entry]
        )
    }
}

private extension Date {
    /// Receipts carry whole seconds.
    var epochSeconds: Int64 { Int64(timeIntervalSince1970.rounded(.down)) }
}

extension AppReceipt {
    /// One receipt entry: a purchase of `productId` at `purchased` (receipts carry whole seconds),
    /// refunded at `cancelled` when given.
    public static func testEntry(
        productId: String,
        transactionId: String,
        purchased: Date,
        quantity: Int = 1,
        cancelled: Date? = nil
    ) -> InAppPurchase {
        var entry = InAppPurchase()
        entry.quantity = quantity
        entry.productId = productId
        entry.transactionId = transactionId
        entry.originalTransactionId = transactionId
        entry.purchaseDate = AppleTimestamp(millisecondsSince1970: purchased.epochSeconds * 1000)
        entry.originalPurchaseDate = entry.purchaseDate
        entry.cancellationDate = cancelled.map { AppleTimestamp(millisecondsSince1970: $0.epochSeconds * 1000) }
        return entry
    }
}

extension TestReceiptCA {
    /// File names inside a CA directory (next to the JWS CA's files).
    public enum FileName {
        public static let root = "receipt-root.pem"
        public static let rootKey = "receipt-root.key.pem"
        public static let intermediate = "receipt-intermediate.pem"
        public static let intermediateKey = "receipt-intermediate.key.pem"
        public static let leaf = "receipt-leaf.pem"
        public static let leafKey = "receipt-leaf.key.pem"
    }

    /// Writes certificates and keys as PEM into `directory`; keys get mode 0600.
    public func write(to directory: URL) throws {
        try PEMFiles.write(
            [
                (FileName.root, try root.serializeAsPEM().pemString, false),
                (FileName.rootKey, rootKey.pemRepresentation, true),
                (FileName.intermediate, try intermediate.serializeAsPEM().pemString, false),
                (FileName.intermediateKey, intermediateKey.pemRepresentation, true),
                (FileName.leaf, try leaf.serializeAsPEM().pemString, false),
                (FileName.leafKey, leafKey.pemRepresentation, true),
            ],
            to: directory
        )
    }

    /// Reads a CA written by ``write(to:)``.
    public static func load(from directory: URL) throws -> TestReceiptCA {
        let text = { (name: String) throws -> String in try PEMFiles.read(name, in: directory) }
        return TestReceiptCA(
            rootKey: try _RSA.Signing.PrivateKey(pemRepresentation: try text(FileName.rootKey)),
            root: try Certificate(pemEncoded: try text(FileName.root)),
            intermediateKey: try _RSA.Signing.PrivateKey(pemRepresentation: try text(FileName.intermediateKey)),
            intermediate: try Certificate(pemEncoded: try text(FileName.intermediate)),
            leafKey: try _RSA.Signing.PrivateKey(pemRepresentation: try text(FileName.leafKey)),
            leaf: try Certificate(pemEncoded: try text(FileName.leaf))
        )
    }
}
