import Crypto
import Foundation
import Synchronization

/// The appAccountTokens clients derive from a user id, so that a tenant which ties purchases to
/// users recognises them and Berth can attribute a transaction it learned of without a claim.
public enum AccountTokens {
    /// cordova-plugin-purchase (13.x, its default `legacy` and its `uuid` obfuscators on the App
    /// Store): the MD5 of the username as 32 lowercase hex digits, laid out as a UUID with the
    /// version digit (position 12) set to 3 and the variant digit (position 16) set to 8. The
    /// plugin hashes UTF-16 code units as bytes: for ids in Latin-1 (ASCII included) that is the
    /// Latin-1 encoding; for others Berth uses UTF-8, which such a client does not match.
    public static func cordovaPlugin(_ userId: String) -> String {
        guard !userId.isEmpty else { return "" }
        return md5UUID(pluginBytes(userId))
    }

    /// The bytes the plugin hashes: UTF-16 code units as bytes when they fit (Latin-1), else UTF-8.
    private static func pluginBytes(_ userId: String) -> [UInt8] {
        let units = Array(userId.utf16)
        return units.allSatisfy { $0 <= 0xFF } ? units.map { UInt8(truncatingIfNeeded: $0) } : Array(userId.utf8)
    }

    /// cordova-plugin-purchase on Google Play: `obfuscatedAccountId` is the MD5 of the username as
    /// 32 lowercase hex digits (the plugin's default obfuscator), hashed as ``cordovaPlugin(_:)`` hashes.
    public static func cordovaPluginHex(_ userId: String) -> String {
        guard !userId.isEmpty else { return "" }
        let bytes = pluginBytes(userId)
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(32)
        for byte in Insecure.MD5.hash(data: bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A stable UUID-formatted name for `text` (its UTF-8 MD5 in the same layout): for records that
    /// a client decodes as a UUID but Berth keys otherwise.
    public static func nameUUID(_ text: String) -> String {
        md5UUID(Array(text.utf8))
    }

    private static func md5UUID(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        for (index, byte) in Insecure.MD5.hash(data: bytes).enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            var high = digits[Int(byte >> 4)], low = digits[Int(byte & 0x0F)]
            if index == 6 { high = UInt8(ascii: "3") }  // hex digit 12: the version
            if index == 8 { high = UInt8(ascii: "8") }  // hex digit 16: the variant
            text.append(high)
            text.append(low)
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The further forms a token that names `userId` may take on a proof, only checked (never
    /// recorded or looked up): Google Play's `obfuscatedExternalAccountId` from cordova-plugin-purchase.
    public static func checkedOnly(_ userId: String) -> [String] {
        [cordovaPluginHex(userId)]
    }

    /// Every token besides the user id itself that names `userId` (lowercase).
    public static func derived(_ userId: String) -> [String] {
        [cordovaPlugin(userId)]
    }
}

/// The users whose derived tokens this process has already recorded (per store), so that only a
/// user's first applied claim writes them: recording is idempotent, so forgetting (a full memo is
/// cleared, a restart empties it) costs one more write, never a wrong answer.
public final class RecordedTokenUsers: Sendable {
    /// 128 bits of SHA-256 of tenant and user: 16 bytes inline per user, no string kept on the heap
    /// (a memo of 100,000 users holds about 2 MB, not 8), and no two users share one by chance.
    struct Key: Hashable {
        var high: UInt64
        var low: UInt64
    }

    private let users = Mutex<Set<Key>>([])
    private let capacity: Int

    public init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    func contains(tenantId: String, userId: String) -> Bool {
        let key = Self.key(tenantId, userId)
        return users.withLock { $0.contains(key) }
    }

    func insert(tenantId: String, userId: String) {
        let key = Self.key(tenantId, userId)
        users.withLock { users in
            if users.count >= capacity { users.removeAll(keepingCapacity: true) }
            users.insert(key)
        }
    }

    static func key(_ tenantId: String, _ userId: String) -> Key {
        var hash = SHA256()
        var tenant = tenantId, user = userId
        tenant.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        withUnsafeBytes(of: UInt8(0)) { hash.update(bufferPointer: $0) }
        user.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        return hash.finalize().withUnsafeBytes { bytes in
            Key(high: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), low: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }
}
