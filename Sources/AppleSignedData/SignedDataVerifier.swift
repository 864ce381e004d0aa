import Crypto
import Foundation
import SwiftASN1
// swift-certificates offers chain building without its expiry check through this SPI; Berth needs it
// because validity is checked against each payload's signedDate, not once per cached chain.
@_spi(DisableValidityCheck) import X509

/// Verifies Apple-signed compact JWS offline: StoreKit 2 transactions, renewal info, App Store
/// Server Notifications v2 (with their nested signed data) and app transactions.
///
/// A JWS is accepted only if: `alg` is ES256; `x5c` holds exactly three certificates; the header's
/// root is one of the configured trusted roots and the chain builds to it; the intermediate carries
/// Apple's WWDR marker OID and the leaf the receipt-signing OID; every certificate is valid at the
/// payload's `signedDate`; the ES256 signature verifies with the leaf key; then the payload's app
/// and environment match the caller's ``AppExpectations``.
///
/// The time the chain is judged at is the payload's `signedDate` (an app transaction's
/// `receiptCreationDate` when it has none); a payload that states neither, as some genuine
/// notifications and Xcode's app transactions do, is judged at the present (`now`), as Apple's
/// libraries do.
///
/// Built chains are cached by certificate fingerprints (bounded, shared by copies of the verifier),
/// so the P-384 link checks run once per leaf; validity dates are checked for every payload.
public struct SignedDataVerifier: Sendable {
    public let roots: TrustedRoots
    let cache: ChainCache
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - roots: the anchors (default: the bundled Apple Root CA - G3).
    ///   - cacheCapacity: how many distinct chains to remember.
    ///   - now: the present, for payloads that do not say when they were signed.
    public init(roots: TrustedRoots, cacheCapacity: Int = 1024, now: @escaping @Sendable () -> Date = { Date() }) {
        self.roots = roots
        self.cache = ChainCache(capacity: cacheCapacity)
        self.now = now
    }

    /// A verifier that trusts Apple Root CA - G3 (bundled) and nothing else.
    public static func apple(cacheCapacity: Int = 1024) throws(SignedDataError) -> SignedDataVerifier {
        SignedDataVerifier(roots: try .apple(), cacheCapacity: cacheCapacity)
    }

    /// Counters of the chain cache: `builds` counts chains verified link by link.
    public var cacheStatistics: (builds: Int, hits: Int, entries: Int) {
        let statistics = cache.statistics
        return (statistics.builds, statistics.hits, statistics.entries)
    }

    // MARK: - Public entry points

    /// Verifies a signed transaction (`jwsRepresentation` in StoreKit 2).
    public func verifyTransaction(_ jws: String, expecting expectations: AppExpectations) async throws(SignedDataError) -> VerifiedTransaction {
        try await verify(jws, as: TransactionPayload.self, expecting: expectations)
    }

    /// Verifies signed subscription renewal info.
    public func verifyRenewalInfo(_ jws: String, expecting expectations: AppExpectations) async throws(SignedDataError) -> VerifiedRenewalInfo {
        try await verify(jws, as: RenewalInfoPayload.self, expecting: expectations)
    }

    /// Verifies a signed app transaction.
    public func verifyAppTransaction(_ jws: String, expecting expectations: AppExpectations) async throws(SignedDataError) -> VerifiedAppTransaction {
        try await verify(jws, as: AppTransactionPayload.self, expecting: expectations)
    }

    /// Verifies a notification's `signedPayload` and the signed transaction and renewal info inside it.
    public func verifyNotification(
        _ signedPayload: String,
        expecting expectations: AppExpectations
    ) async throws(SignedDataError) -> VerifiedNotification {
        let outer = try await verify(signedPayload, as: NotificationPayload.self, expecting: expectations)
        var transaction: VerifiedTransaction?
        var renewalInfo: VerifiedRenewalInfo?
        if let nested = outer.payload.data?.signedTransactionInfo {
            do {
                transaction = try await verify(nested, as: TransactionPayload.self, expecting: expectations)
            } catch {
                throw SignedDataError(error.code, "data.signedTransactionInfo: \(error.reason)")
            }
            if let outerBundle = outer.payload.data?.bundleId, let innerBundle = transaction?.payload.bundleId, outerBundle != innerBundle {
                throw SignedDataError(.wrongBundle, "data.signedTransactionInfo is for \(innerBundle), the notification for \(outerBundle)")
            }
        }
        if let nested = outer.payload.data?.signedRenewalInfo {
            do {
                renewalInfo = try await verify(nested, as: RenewalInfoPayload.self, expecting: expectations)
            } catch {
                throw SignedDataError(error.code, "data.signedRenewalInfo: \(error.reason)")
            }
        }
        return VerifiedNotification(notification: outer, transaction: transaction, renewalInfo: renewalInfo)
    }

    /// Verifies a JWS of any kind, telling the kind from its payload's fields (refused when no
    /// field tells; ``verify(_:as:expecting:)`` takes the kind from the caller).
    public func verifyAny(_ jws: String, expecting expectations: AppExpectations) async throws(SignedDataError) -> VerifiedAnySignedData {
        try await verify(jws, as: try CompactJWS(jws).payloadKind(), expecting: expectations)
    }

    /// Verifies a JWS as the kind the caller expects.
    public func verify(
        _ jws: String,
        as kind: SignedPayloadKind,
        expecting expectations: AppExpectations
    ) async throws(SignedDataError) -> VerifiedAnySignedData {
        switch kind {
        case .notification: return .notification(try await verifyNotification(jws, expecting: expectations))
        case .appTransaction: return .appTransaction(try await verifyAppTransaction(jws, expecting: expectations))
        case .renewalInfo: return .renewalInfo(try await verifyRenewalInfo(jws, expecting: expectations))
        case .transaction: return .transaction(try await verifyTransaction(jws, expecting: expectations))
        }
    }

    // MARK: - The pipeline

    func verify<Payload: SignedPayload>(
        _ text: String,
        as type: Payload.Type,
        expecting expectations: AppExpectations
    ) async throws(SignedDataError) -> VerifiedSignedData<Payload> {
        let jws = try CompactJWS(text)
        // A header seen before stands for a chain already built (and an alg already checked).
        let cachedChain = cache.lookup(header: jws.headerSegment)
        var header: CompactJWS.Header?
        if cachedChain == nil {
            let decoded = try jws.decodeHeader()
            guard decoded.alg == "ES256" else {
                throw SignedDataError(.unsupportedAlgorithm, "alg is \(decoded.alg.map { "\"\($0)\"" } ?? "missing"), only ES256 is accepted")
            }
            header = decoded
        }
        let payload: Payload
        do {
            try StrictJSON.check(jws.payload)
        } catch {
            throw SignedDataError(.malformed, error == .duplicateKey ? "payload names a member twice" : "payload is not JSON (or nests too deep)")
        }
        do {
            payload = try JSONDecoder().decode(Payload.self, from: jws.payload)
        } catch {
            // Foundation reports a fraction where a whole number belongs as invalid JSON, with no
            // path (the bytes passed StrictJSON above): name the member instead.
            if case DecodingError.dataCorrupted(let context) = error, context.codingPath.isEmpty,
                let member = Self.fractionalMember(in: jws.payload, wholeNumbers: Payload.wholeNumberMembers)
            {
                throw SignedDataError(.malformed, "payload is not a valid \(Payload.self): \(member.path): \(member.value) is not a whole number")
            }
            throw SignedDataError(.malformed, "payload is not a valid \(Payload.self): \(Self.describe(error))")
        }
        let stated = payload.signingTime
        let signedDate = stated ?? AppleTimestamp(now())
        let claims = payload.claims

        let trust: VerifiedSignedData<Payload>.Trust
        if let claimed = claims.environment, claimed.isLocalTesting {
            guard expectations.allowsLocalTesting else {
                throw SignedDataError(
                    .wrongEnvironment,
                    "\(claimed) data is not signed by Apple and is accepted only where local testing is explicitly allowed"
                )
            }
            let localHeader: CompactJWS.Header
            if let header { localHeader = header } else { localHeader = try jws.decodeHeader() }
            try verifyLocalTestingSignature(jws, header: localHeader)
            trust = .localTesting
        } else {
            let chain: TrustedChain
            if let cachedChain {
                chain = cachedChain
            } else {
                let chainHeader: CompactJWS.Header
                if let header { chainHeader = header } else { chainHeader = try jws.decodeHeader() }
                chain = try await trustedChain(for: jws, header: chainHeader)
            }
            try Self.checkValidity(of: chain, at: signedDate, stated: stated != nil)
            try Self.checkSignature(jws, with: chain.leafKey)
            trust = .chain(rootFingerprint: chain.rootFingerprint)
        }
        try Self.check(claims, against: expectations)
        return VerifiedSignedData(payload: payload, rawPayload: jws.payload, signedDate: signedDate, statesSignedDate: stated != nil, trust: trust)
    }

    // MARK: - Chain

    private func trustedChain(for jws: CompactJWS, header: CompactJWS.Header) async throws(SignedDataError) -> TrustedChain {
        guard let x5c = header.x5c else {
            throw SignedDataError(.badChain, "header has no x5c certificate chain")
        }
        guard x5c.count == 3 else {
            throw SignedDataError(.badChain, "x5c must hold leaf, intermediate and root; it holds \(x5c.count) certificate(s)")
        }
        var ders: [[UInt8]] = []
        ders.reserveCapacity(3)
        for (index, entry) in x5c.enumerated() {
            guard let bytes = Data(base64Encoded: entry), !bytes.isEmpty else {
                throw SignedDataError(.badChain, "x5c[\(index)] is not base64")
            }
            ders.append(Array(bytes))
        }
        let key = ChainKey(leaf: SHA256.hash(data: ders[0]), intermediate: SHA256.hash(data: ders[1]), root: SHA256.hash(data: ders[2]))
        if let cached = cache.lookup(key, header: jws.headerSegment) { return cached }
        // The same certificates failed before: refuse again without repeating the work.
        if let failure = cache.failure(for: key) { throw failure }

        do {
            let chain = try await buildChain(ders, key: key)
            cache.insert(chain, for: key, header: jws.headerSegment)
            return chain
        } catch {
            cache.recordFailure(error, for: key)
            throw error
        }
    }

    /// Cheap checks first (the root is a configured one byte for byte, names link up, Apple's marker
    /// OIDs are there), then each signature link once: root → intermediate (skipped for an
    /// intermediate a configured root was already seen to sign), intermediate → leaf; only a chain
    /// whose links hold goes through the RFC 5280 policy checks.
    private func buildChain(_ ders: [[UInt8]], key: ChainKey) async throws(SignedDataError) -> TrustedChain {
        let rootFingerprint = key.root
        cache.recordBuild()
        var certificates: [Certificate] = []
        for (index, der) in ders.enumerated() {
            do {
                certificates.append(try Certificate(derEncoded: der))
            } catch {
                throw SignedDataError(.badChain, "x5c[\(index)] is not a DER X.509 certificate")
            }
        }
        let (leaf, intermediate) = (certificates[0], certificates[1])

        guard roots.derEncodings.contains(ders[2]) else {
            throw SignedDataError(.untrustedRoot, "the root in x5c (\(certificates[2].subject)) is not a trusted root")
        }
        guard intermediate.hasExtension(AppleCertificateOIDs.wwdrIntermediate) else {
            throw SignedDataError(.missingAppleOID, "intermediate lacks Apple's WWDR marker OID \(AppleCertificateOIDs.wwdrIntermediate)")
        }
        guard leaf.hasExtension(AppleCertificateOIDs.receiptSigningLeaf) else {
            throw SignedDataError(.missingAppleOID, "leaf lacks Apple's receipt-signing marker OID \(AppleCertificateOIDs.receiptSigningLeaf)")
        }
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw SignedDataError(.badChain, "leaf key is not a P-256 key, ES256 cannot verify with it")
        }
        let root = certificates[2]
        guard intermediate.issuer == root.subject else {
            throw SignedDataError(.untrustedRoot, "the intermediate (\(intermediate.subject)) is not issued by the root in x5c")
        }
        guard leaf.issuer == intermediate.subject else {
            throw SignedDataError(.badChain, "the leaf is not issued by the intermediate in x5c")
        }
        let link = ChainCache.Link(intermediate: key.intermediate, root: key.root)
        if !cache.isKnown(link) {
            guard root.publicKey.isValidSignature(intermediate.signature, for: intermediate) else {
                throw SignedDataError(.untrustedRoot, "the intermediate (\(intermediate.subject)) is not issued by a trusted root")
            }
        }
        guard intermediate.publicKey.isValidSignature(leaf.signature, for: leaf) else {
            throw SignedDataError(.badChain, "the leaf's signature does not verify with the intermediate's key")
        }

        var verifier = Verifier(rootCertificates: CertificateStore([root])) {
            RFC5280Policy.withValidityCheckDisabled()
            AppleMarkerExtensionsPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let validated) = result else {
            throw SignedDataError(.badChain, "the certificate chain does not meet RFC 5280 (CA constraints or key usage)")
        }
        cache.remember(link)
        let validatedRoot = validated.root
        return TrustedChain(
            leafKey: leafKey,
            validity: [
                .init(role: "leaf", notBefore: leaf.notValidBefore, notAfter: leaf.notValidAfter),
                .init(role: "intermediate", notBefore: intermediate.notValidBefore, notAfter: intermediate.notValidAfter),
                .init(role: "root", notBefore: validatedRoot.notValidBefore, notAfter: validatedRoot.notValidAfter),
            ],
            rootFingerprint: rootFingerprint.map { String(format: "%02x", $0) }.joined()
        )
    }

    private static func checkValidity(of chain: TrustedChain, at signedDate: AppleTimestamp, stated: Bool) throws(SignedDataError) {
        let time = signedDate.date
        let when = stated ? "the payload was signed \(signedDate)" : "the payload states no signedDate and was judged now, \(signedDate)"
        for certificate in chain.validity {
            if time < certificate.notBefore {
                throw SignedDataError(
                    .certificateNotYetValid,
                    "the \(certificate.role) certificate is valid from \(certificate.notBefore.formatted(.iso8601)), \(when)"
                )
            }
            if time > certificate.notAfter {
                throw SignedDataError(
                    .certificateExpired,
                    "the \(certificate.role) certificate expired \(certificate.notAfter.formatted(.iso8601)), \(when)"
                )
            }
        }
    }

    private static func checkSignature(_ jws: CompactJWS, with key: P256.Signing.PublicKey) throws(SignedDataError) {
        guard jws.signature.count == 64, let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature) else {
            throw SignedDataError(.badSignature, "an ES256 signature is 64 bytes (r||s), found \(jws.signature.count)")
        }
        guard key.isValidSignature(signature, for: Data(jws.signingInput.utf8)) else {
            throw SignedDataError(.badSignature, "the ES256 signature does not verify with the leaf certificate's key")
        }
    }

    /// Xcode-signed data chains to a local StoreKit testing certificate, not to Apple: only the
    /// signature is checked, with the first certificate's key.
    private func verifyLocalTestingSignature(_ jws: CompactJWS, header: CompactJWS.Header) throws(SignedDataError) {
        guard let first = header.x5c?.first, let der = Data(base64Encoded: first),
            let certificate = try? Certificate(derEncoded: Array(der)),
            let key = P256.Signing.PublicKey(certificate.publicKey)
        else {
            throw SignedDataError(.badChain, "local testing data carries no usable P-256 certificate in x5c")
        }
        try Self.checkSignature(jws, with: key)
    }

    // MARK: - App checks

    /// The app first (bundle id, then App Store app id), then the environment: the order of Apple's
    /// libraries, so a payload wrong on both counts is refused for the same reason.
    private static func check(_ claims: PayloadClaims, against expectations: AppExpectations) throws(SignedDataError) {
        if let expected = expectations.bundleId, claims.carriesBundleId {
            guard claims.bundleId == expected else {
                throw SignedDataError(.wrongBundle, "expected bundle id \(expected), got \(claims.bundleId ?? "none")")
            }
        }
        if let expected = expectations.appAppleId, claims.carriesAppAppleId {
            if let claimed = claims.appAppleId {
                guard claimed == expected else {
                    throw SignedDataError(.wrongAppAppleId, "expected appAppleId \(expected), got \(claimed)")
                }
            } else if claims.environment == .production {
                throw SignedDataError(.wrongAppAppleId, "production data must carry appAppleId \(expected)")
            }
        }
        if let accepted = expectations.environments {
            let claimed = claims.environment
            let allowedLocal = expectations.allowsLocalTesting && (claimed?.isLocalTesting ?? false)
            guard let claimed, accepted.contains(claimed) || allowedLocal else {
                let names = accepted.map(\.rawValue).sorted().joined(separator: " or ")
                throw SignedDataError(.wrongEnvironment, "expected \(names) data, got \(claims.environment?.rawValue ?? "no environment")")
            }
        }
    }

    /// The field and the problem: `quantity: Parsed JSON number <1.5> does not fit in Int.`,
    /// `transactionId: expected a string, found a number`.
    static func describe(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context, _ last: (any CodingKey)? = nil) -> String {
            (context.codingPath + (last.map { [$0] } ?? [])).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
                .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        func named(_ path: String, _ problem: String) -> String { path.isEmpty ? problem : "\(path): \(problem)" }
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            return named(path(context), "expected \(Self.jsonName(of: type)) (\(context.debugDescription))")
        case DecodingError.valueNotFound(let type, let context):
            return named(path(context), "expected \(Self.jsonName(of: type)), found null")
        case DecodingError.keyNotFound(let key, let context):
            return named(path(context, key), "missing")
        case DecodingError.dataCorrupted(let context):
            return named(path(context), context.debugDescription)
        default:
            return "\(error)"
        }
    }

    /// The first member named in `wholeNumbers` (at any depth) whose value is a number with a fraction.
    static func fractionalMember(in payload: Data, wholeNumbers: Set<String>) -> (path: String, value: String)? {
        func search(_ value: Any, _ path: String) -> (path: String, value: String)? {
            if let object = value as? [String: Any] {
                for key in object.keys.sorted() {
                    let inner = path.isEmpty ? key : "\(path).\(key)"
                    if wholeNumbers.contains(key), let number = object[key] as? NSNumber, !(number is Bool),
                        number.doubleValue.rounded() != number.doubleValue || !number.doubleValue.isFinite
                    {
                        return (inner, "\(number)")
                    }
                    if let found = search(object[key] as Any, inner) { return found }
                }
            }
            return nil
        }
        guard let value = try? JSONSerialization.jsonObject(with: payload) else { return nil }
        return search(value, "")
    }

    private static func jsonName(of type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Int64.Type, is Int32.Type, is AppleTimestamp.Type: return "a whole number"
        case is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        default: return "\(type)"
        }
    }
}
