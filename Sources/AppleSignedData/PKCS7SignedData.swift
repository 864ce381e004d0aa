import Foundation
import SwiftASN1
import X509

/// The parts of a PKCS#7 / CMS SignedData blob (RFC 5652) that a receipt check needs.
/// Parsed with BER rules: Apple's receipts are not always strict DER.
struct PKCS7SignedData {
    struct SignerInfo {
        var issuer: DistinguishedName
        var serialNumber: Certificate.SerialNumber
        var digestAlgorithm: ASN1ObjectIdentifier
        /// The signed attributes re-encoded as the SET the signature covers, and their message digest
        /// (RFC 5652 requires it whenever signed attributes are present; parsing refuses its absence).
        var signedAttributes: (setBytes: [UInt8], messageDigest: [UInt8])?
        var signatureAlgorithm: ASN1ObjectIdentifier
        var signature: [UInt8]
    }

    enum OID {
        static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
        static let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
        static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
        static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
        static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
        static let sha1WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 5]
        static let sha256WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 11]
        static let messageDigest: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]
        static let contentType: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 3]
    }

    /// The most certificates a receipt may carry: Apple's carry exactly the three of one chain
    /// (signer, WWDR intermediate, Apple Inc. Root). More is refused before any certificate is
    /// parsed or any chain is built, so a receipt cannot make chain building explode.
    static let maximumCertificates = 3

    let content: ArraySlice<UInt8>
    let certificates: [Certificate]
    let signer: SignerInfo

    init(bytes: [UInt8]) throws(SignedDataError) {
        do {
            let root = try BER.parse(bytes)
            let contentInfo = try Self.children(root, .sequence, "ContentInfo")
            guard contentInfo.count >= 2, try ASN1ObjectIdentifier(berEncoded: contentInfo[0]) == OID.signedData else {
                throw SignedDataError(.malformed, "the receipt is not a PKCS#7 SignedData")
            }
            let explicit = try Self.children(contentInfo[1], ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific), "ContentInfo.content")
            guard let signedDataNode = explicit.first else { throw SignedDataError(.malformed, "SignedData is empty") }
            let signedData = try Self.children(signedDataNode, .sequence, "SignedData")
            guard signedData.count >= 4 else { throw SignedDataError(.malformed, "SignedData has \(signedData.count) fields") }
            guard try Int(berEncoded: signedData[0]) == 1 else { throw SignedDataError(.malformed, "SignedData version is not 1") }
            let digestAlgorithms = try Self.children(signedData[1], .set, "digestAlgorithms").map(Self.algorithm)

            // encapContentInfo: SEQUENCE { eContentType, [0] EXPLICIT OCTET STRING }
            let encapsulated = try Self.children(signedData[2], .sequence, "encapContentInfo")
            guard encapsulated.count == 2, try ASN1ObjectIdentifier(berEncoded: encapsulated[0]) == OID.data else {
                throw SignedDataError(.malformed, "the receipt carries no data content")
            }
            let wrapped = try Self.children(encapsulated[1], ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific), "eContent")
            guard let octets = wrapped.first else { throw SignedDataError(.malformed, "eContent is empty") }
            content = try ASN1OctetString(berEncoded: octets).bytes

            // certificates [0] IMPLICIT SET OF Certificate, then optional crls [1], then signerInfos SET.
            var certificates: [Certificate] = []
            var signerInfos: [ASN1Node] = []
            for node in signedData.dropFirst(3) {
                if node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                    guard case .constructed(let items) = node.content else { throw SignedDataError(.malformed, "certificates are not a set") }
                    var count = 0
                    for _ in items { count += 1 }
                    guard count <= Self.maximumCertificates else {
                        throw SignedDataError(
                            .badChain,
                            "a receipt carries at most \(Self.maximumCertificates) certificates (one chain); this one carries \(count)"
                        )
                    }
                    certificates = try items.map { try Certificate(derEncoded: Array($0.encodedBytes)) }
                } else if node.identifier == .set {
                    guard case .constructed(let items) = node.content else { throw SignedDataError(.malformed, "signerInfos are not a set") }
                    signerInfos = Array(items)
                }
            }
            guard signerInfos.count == 1 else {
                throw SignedDataError(.malformed, "a receipt has exactly one signer, found \(signerInfos.count)")
            }
            self.certificates = certificates
            signer = try Self.signerInfo(signerInfos[0])
            guard digestAlgorithms.contains(signer.digestAlgorithm) else {
                throw SignedDataError(.malformed, "the signer's digest algorithm is not among SignedData's digestAlgorithms")
            }
        } catch let error as SignedDataError {
            throw error
        } catch {
            // swift-asn1's errors name its own source lines: callers get a stable sentence instead.
            throw SignedDataError(.malformed, "the receipt is not valid PKCS#7 (its ASN.1 structure does not parse)")
        }
    }

    private static func signerInfo(_ node: ASN1Node) throws -> SignerInfo {
        let fields = try children(node, .sequence, "SignerInfo")
        guard fields.count >= 5 else { throw SignedDataError(.malformed, "SignerInfo has \(fields.count) fields") }
        guard try Int(berEncoded: fields[0]) == 1 else { throw SignedDataError(.malformed, "SignerInfo version is not 1") }
        let sid = try children(fields[1], .sequence, "SignerInfo.sid")
        guard sid.count == 2 else { throw SignedDataError(.malformed, "the signer is not named by issuer and serial number") }
        // Named by its node type so the compiler picks DERParseable's initializer, not the deprecated
        // implicitly-tagged one it prefers for a byte array.
        let parseName: (ASN1Node) throws -> DistinguishedName = DistinguishedName.init(derEncoded:)
        let issuer = try parseName(sid[0])
        let serial = Certificate.SerialNumber(bytes: try ArraySlice<UInt8>(derEncoded: Array(sid[1].encodedBytes)))
        let digestAlgorithm = try algorithm(fields[2])

        var index = 3
        var signedAttributes: (setBytes: [UInt8], messageDigest: [UInt8])?
        if fields[index].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            // The signature covers the DER of the attributes as a SET (tag 0x31), not the [0] tag.
            var setBytes = Array(fields[index].encodedBytes)
            setBytes[0] = 0x31
            var digest: [UInt8]?
            if case .constructed(let attributes) = fields[index].content {
                for attribute in attributes {
                    let parts = try children(attribute, .sequence, "signed attribute")
                    guard parts.count == 2 else { throw SignedDataError(.malformed, "a signed attribute is not a type and a value set") }
                    let type = try ASN1ObjectIdentifier(berEncoded: parts[0])
                    let values = try children(parts[1], .set, "signed attribute values")
                    if type == OID.messageDigest {
                        guard digest == nil, values.count == 1 else {
                            throw SignedDataError(.badSignature, "the signed attributes carry more than one message digest")
                        }
                        digest = Array(try ASN1OctetString(berEncoded: values[0]).bytes)
                    } else if type == OID.contentType {
                        guard values.count == 1, try ASN1ObjectIdentifier(berEncoded: values[0]) == OID.data else {
                            throw SignedDataError(.badSignature, "the signed content type is not data")
                        }
                    }
                }
            }
            // Without a message digest the signature would cover the attributes only, not the receipt.
            guard let digest else {
                throw SignedDataError(.badSignature, "the signed attributes carry no message digest, so the receipt content is not signed")
            }
            signedAttributes = (setBytes, digest)
            index += 1
        }
        guard fields.count > index + 1 else { throw SignedDataError(.malformed, "SignerInfo lacks its signature") }
        let signatureAlgorithm = try algorithm(fields[index])
        let signature = Array(try ASN1OctetString(berEncoded: fields[index + 1]).bytes)
        return SignerInfo(
            issuer: issuer,
            serialNumber: serial,
            digestAlgorithm: digestAlgorithm,
            signedAttributes: signedAttributes,
            signatureAlgorithm: signatureAlgorithm,
            signature: signature
        )
    }

    /// An AlgorithmIdentifier whose parameters are absent or NULL (as for SHA and RSA).
    private static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        let parts = try children(node, .sequence, "AlgorithmIdentifier")
        guard let first = parts.first, parts.count <= 2 else { throw SignedDataError(.malformed, "malformed AlgorithmIdentifier") }
        if parts.count == 2 {
            guard parts[1].identifier == .null, case .primitive(let bytes) = parts[1].content, bytes.isEmpty else {
                throw SignedDataError(.malformed, "unexpected AlgorithmIdentifier parameters")
            }
        }
        return try ASN1ObjectIdentifier(berEncoded: first)
    }

    private static func children(_ node: ASN1Node, _ identifier: ASN1Identifier, _ what: String) throws -> [ASN1Node] {
        guard node.identifier == identifier, case .constructed(let items) = node.content else {
            throw SignedDataError(.malformed, "\(what) is not the expected ASN.1 structure")
        }
        return Array(items)
    }

    /// The certificate that signed, found by issuer and serial number.
    var signerCertificate: Certificate? {
        certificates.first { $0.issuer == signer.issuer && $0.serialNumber == signer.serialNumber }
    }
}
