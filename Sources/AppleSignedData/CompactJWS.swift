import Foundation

/// A compact JWS split into its parts, with nothing verified yet.
struct CompactJWS {
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
    }

    /// The base64url header text, exactly as received (the chain cache's shortcut key).
    let headerSegment: Substring
    let payload: Data
    let signature: Data
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    let signingInput: Substring

    init(_ text: String) throws(SignedDataError) {
        var trimmed = Substring(text)
        while let first = trimmed.first, first.isWhitespace { trimmed.removeFirst() }
        while let last = trimmed.last, last.isWhitespace { trimmed.removeLast() }
        // Split on the UTF-8 view: walking Characters of a 5 KB token is needlessly slow.
        let bytes = trimmed.utf8
        var dots: [String.Index] = []
        dots.reserveCapacity(3)
        // The dots from the contiguous bytes (memchr), else by walking the view.
        let contiguous: Bool? = bytes.withContiguousStorageIfAvailable { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while dots.count < 3, offset < buffer.count,
                let hit = memchr(base + offset, Int32(UInt8(ascii: ".")), buffer.count - offset)
            {
                let at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                dots.append(bytes.index(bytes.startIndex, offsetBy: at))
                offset = at + 1
            }
            return true
        }
        if contiguous == nil {
            var cursor = bytes.startIndex
            while let dot = bytes[cursor...].firstIndex(of: UInt8(ascii: ".")) {
                dots.append(dot)
                guard dots.count < 3 else { break }
                cursor = bytes.index(after: dot)
            }
        }
        guard dots.count == 2 else {
            throw SignedDataError(.malformed, "a compact JWS has 3 dot-separated parts, found \(dots.count + 1)")
        }
        let parts = [
            trimmed[trimmed.startIndex..<dots[0]],
            trimmed[bytes.index(after: dots[0])..<dots[1]],
            trimmed[bytes.index(after: dots[1])..<trimmed.endIndex],
        ]
        guard !parts[0].isEmpty else {
            throw SignedDataError(.malformed, "JWS header is empty")
        }
        guard let payload = Base64URL.decode(parts[1]), !payload.isEmpty else {
            throw SignedDataError(.malformed, "JWS payload is not base64url")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw SignedDataError(.malformed, "JWS signature is not base64url")
        }
        headerSegment = parts[0]
        self.payload = payload
        self.signature = signature
        signingInput = trimmed[trimmed.startIndex..<parts[1].endIndex]
    }

    /// Decodes the protected header (only needed when its chain is not cached yet).
    func decodeHeader() throws(SignedDataError) -> Header {
        guard let bytes = Base64URL.decode(headerSegment) else {
            throw SignedDataError(.malformed, "JWS header is not base64url")
        }
        do {
            try StrictJSON.check(bytes)
        } catch {
            throw SignedDataError(.malformed, error == .duplicateKey ? "JWS header names a member twice" : "JWS header is not JSON")
        }
        do {
            return try JSONDecoder().decode(Header.self, from: bytes)
        } catch {
            throw SignedDataError(.malformed, "JWS header is not a JSON object with string alg and x5c")
        }
    }
}
