import Crypto
import Foundation
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#endif

/// Reading and writing a test CA as a directory of PEM files.
extension TestCA {
    /// File names inside a CA directory.
    public enum FileName {
        public static let root = "root.pem"
        public static let rootKey = "root.key.pem"
        public static let intermediate = "intermediate.pem"
        public static let intermediateKey = "intermediate.key.pem"
        public static let leaf = "leaf.pem"
        public static let leafKey = "leaf.key.pem"
    }

    /// Writes certificates and keys as PEM into `directory` (created if needed); keys get mode 0600.
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
    public static func load(from directory: URL) throws -> TestCA {
        let text = { (name: String) throws -> String in try PEMFiles.read(name, in: directory) }
        return TestCA(
            rootKey: try P384.Signing.PrivateKey(pemRepresentation: try text(FileName.rootKey)),
            root: try Certificate(pemEncoded: try text(FileName.root)),
            intermediateKey: try P384.Signing.PrivateKey(pemRepresentation: try text(FileName.intermediateKey)),
            intermediate: try Certificate(pemEncoded: try text(FileName.intermediate)),
            leafKey: try P256.Signing.PrivateKey(pemRepresentation: try text(FileName.leafKey)),
            leaf: try Certificate(pemEncoded: try text(FileName.leaf))
        )
    }
}

/// PEM files of the test CAs: certificates world-readable, keys 0600.
enum PEMFiles {
    static func write(_ files: [(name: String, contents: String, secret: Bool)], to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in files {
            let url = directory.appendingPathComponent(file.name)
            let data = Data((file.contents + "\n").utf8)
            if file.secret {
                // L14: a key is never readable by others, not even for a moment: written to a new
                // file created 0600, then moved over the old one.
                let temporary = directory.appendingPathComponent(".\(file.name).\(UUID().uuidString)")
                try writePrivate(data, to: temporary.path)
                if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
                try FileManager.default.moveItem(at: temporary, to: url)
            } else {
                try data.write(to: url, options: .atomic)
            }
        }
    }

    /// Creates `path` (which must not exist) with mode 0600 from the start and writes `data` into it.
    static func writePrivate(_ data: Data, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { buffer -> Int in
            var offset = 0
            while offset < buffer.count {
                let count = Glibc.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                guard count > 0 else { return -1 }
                offset += count
            }
            return offset
        }
        guard written == data.count else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    static func read(_ name: String, in directory: URL) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }
}
