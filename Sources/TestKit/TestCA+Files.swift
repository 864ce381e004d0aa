import Crypto
import Foundation
import X509

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
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
        let files: [(String, String, Bool)] = [
            (FileName.root, try root.serializeAsPEM().pemString, false),
            (FileName.rootKey, rootKey.pemRepresentation, true),
            (FileName.intermediate, try intermediate.serializeAsPEM().pemString, false),
            (FileName.intermediateKey, intermediateKey.pemRepresentation, true),
            (FileName.leaf, try leaf.serializeAsPEM().pemString, false),
            (FileName.leafKey, leafKey.pemRepresentation, true),
        ]
        for (name, contents, secret) in files {
            let url = directory.appendingPathComponent(name)
            try Data((contents + "\n").utf8).write(to: url, options: .atomic)
            if secret { try fileManager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path) }
        }
    }

    /// Reads a CA written by ``write(to:)``.
    public static func load(from directory: URL) throws -> TestCA {
        func text(_ name: String) throws -> String {
            try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        }
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
