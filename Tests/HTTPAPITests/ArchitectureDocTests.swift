import Domain
import Foundation
import Testing
import UseCases

/// docs/architecture.md's recipe for a product kind matches the code: every file it names exists,
/// its table of kinds lists every `ProductKind`, and the registry has a module for each.
@Suite("docs/architecture.md")
struct ArchitectureDocTests {
    static func document() throws -> String {
        try String(contentsOf: Harness.repository.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
    }

    /// The paths in backticks that start with `Sources/` (placeholders such as `<folder…>` excluded).
    static func paths(in text: Substring) -> [String] {
        text.split(separator: "`").enumerated().compactMap { index, part in
            index % 2 == 1 && part.hasPrefix("Sources/") && !part.contains("<") && !part.contains("…") && !part.contains("*") ? String(part) : nil
        }
    }

    @Test("every source file or folder the document names exists")
    func namedFilesExist() throws {
        let text = try Self.document()
        let paths = Self.paths(in: text[...])
        #expect(paths.count >= 15, "\(paths)")
        for path in paths {
            #expect(FileManager.default.fileExists(atPath: Harness.repository.appendingPathComponent(path).path), "\(path) is named in docs/architecture.md")
        }
    }

    @Test("the table of kinds lists every ProductKind with its module and rules, and the registry has a module for each")
    func kindsTableMatchesRegistry() throws {
        let text = try Self.document()
        let section = try #require(text.range(of: "## Adding a product kind"))
        let rows = text[section.upperBound...].split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains("Sources/UseCases/Kinds/") }
        var listed: [ProductKind: [String]] = [:]
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let kind = try #require(ProductKind(rawValue: cells.first ?? ""), "\(row)")
            listed[kind] = Self.paths(in: row)
        }
        #expect(Set(listed.keys) == Set(ProductKind.allCases))
        #expect(Set(PurchaseKinds.all.modules.keys) == Set(ProductKind.allCases))
        for (kind, paths) in listed {
            #expect(paths.count == 2, "\(kind): \(paths)")
            #expect(paths.allSatisfy { FileManager.default.fileExists(atPath: Harness.repository.appendingPathComponent($0).path) }, "\(kind): \(paths)")
            // The module file holds the registered module's type.
            let module = try #require(PurchaseKinds.all.modules[kind])
            let source = try String(contentsOf: Harness.repository.appendingPathComponent(paths[0]), encoding: .utf8)
            #expect(source.contains("public struct \(type(of: module)): PurchaseKind"), "\(paths[0]) declares \(type(of: module))")
        }
    }
}
