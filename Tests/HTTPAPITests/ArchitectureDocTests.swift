import Domain
import Foundation
import HTTPAPI
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
            #expect(
                FileManager.default.fileExists(atPath: Harness.repository.appendingPathComponent(path).path),
                "\(path) is named in docs/architecture.md"
            )
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
            #expect(
                paths.allSatisfy { FileManager.default.fileExists(atPath: Harness.repository.appendingPathComponent($0).path) },
                "\(kind): \(paths)"
            )
            // The module file holds the registered module's type.
            let module = try #require(PurchaseKinds.all.modules[kind])
            let source = try String(contentsOf: Harness.repository.appendingPathComponent(paths[0]), encoding: .utf8)
            #expect(
                source.contains("public struct \(type(of: module)): PurchaseKind")
                    || source.contains("public struct \(type(of: module)): SteppedPurchaseKind"),
                "\(paths[0]) declares \(type(of: module))"
            )
        }
    }
}

extension ArchitectureDocTests {
    @Test("the table of stores lists every registered PurchaseSource with the module that declares it")
    func storesTableMatchesRegistry() throws {
        let text = try Self.document()
        let section = try #require(text.range(of: "## Adding a store"))
        let rows = text[section.upperBound...].split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains("Sources/UseCases/Stores/") }
        var listed: [String: String] = [:]
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let path: String = try #require(Self.paths(in: row).first, "\(row)")
            listed[cells.first ?? ""] = path
        }
        let registered = PurchaseSources.standard.all
        #expect(Set(listed.keys) == Set(registered.map(\.store.rawValue)))
        for source in registered {
            let path = try #require(listed[source.store.rawValue])
            let file = try String(contentsOf: Harness.repository.appendingPathComponent(path), encoding: .utf8)
            #expect(file.contains("public struct \(type(of: source)): PurchaseSource"), "\(path) declares \(type(of: source))")
        }
    }

    @Test(
        "the document states the layering the package declares: BerthApp builds the application; HTTPAPI and the workers reach the use cases, never SQLStore, and HTTPAPI not the workers"
    )
    func layering() throws {
        let text = try Self.document()
        #expect(text.contains("`HTTPAPI` and `BerthWorkers` →\n`UseCases` → `Domain` ← `SQLStore` (HTTPAPI does not reach the workers)"))
        let package = try String(contentsOf: Harness.repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        func dependencies(_ target: String) throws -> Substring {
            let start = try #require(package.range(of: "name: \"\(target)\",\n            dependencies: ["))
            return package[start.upperBound...].prefix { $0 != "]" }
        }
        for target in ["HTTPAPI", "BerthWorkers", "UseCases"] {
            #expect(try !dependencies(target).contains("\"SQLStore\""), "\(target) must not depend on SQLStore")
        }
        #expect(try !dependencies("HTTPAPI").contains("\"BerthWorkers\""), "HTTPAPI maps HTTP to use cases; BerthApp builds the workers")
        #expect(try dependencies("BerthApp").contains("\"BerthWorkers\""))
    }

    @Test("no controller holds the store or opens a unit of work: every read and write behind a route is a use case's")
    func controllersHoldNoStore() throws {
        #expect(try Self.document().contains("no controller holds the store"))
        var checked = 0
        for folder in ["Sources/HTTPAPI/Controllers", "Sources/HTTPAPI/Compat"] {
            let directory = Harness.repository.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? line
                    for form in ["any Store", "store.read", "store.write", "StoreSession"] {
                        #expect(!code.contains(form), "\(folder)/\(name) reaches the store (\(form)): \(line)")
                    }
                }
                checked += 1
            }
        }
        #expect(checked >= 25, "the controllers were not found (\(checked) files)")
    }

    /// One composition root: the use cases the routes call are declared in `RouteServices` and
    /// built in BerthApp; no HTTPAPI file constructs one (a route that did would hold the store).
    @Test("HTTPAPI builds none of the use cases it is given: each type RouteServices names is constructed only in BerthApp")
    func oneCompositionRoot() throws {
        let router = try String(contentsOf: Harness.repository.appendingPathComponent("Sources/HTTPAPI/BuildRouter.swift"), encoding: .utf8)
        let protocolText = try #require(router.components(separatedBy: "public protocol RouteServices").dropFirst().first)
        let declarations = protocolText.components(separatedBy: "\n}").first ?? ""
        // `var verifyPurchase: VerifyPurchase { get }` → VerifyPurchase, for the use cases (not the settings).
        let types = declarations.split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard line.contains("{ get }"), parts.count == 2 else { return nil }
            let type = parts[1].replacingOccurrences(of: "{ get }", with: "").trimmingCharacters(in: .whitespaces)
            return type.first?.isUppercase == true && !type.contains(" ") && !type.hasSuffix("?") ? type : nil
        }
        #expect(types.count >= 45, "RouteServices names \(types.count) use cases: \(types)")
        let built = try String(contentsOf: Harness.repository.appendingPathComponent("Sources/BerthApp/BerthServices.swift"), encoding: .utf8)
        let skipped: Set<String> = ["TenantRegistry", "BerthMetrics", "TrustedProxies", "APIKeyResolver", "RouteAccessTable", "Logger"]
        for type in types where !skipped.contains(type) {
            #expect(built.contains(type + "("), "BerthServices does not build \(type)")
        }
        let folder = Harness.repository.appendingPathComponent("Sources/HTTPAPI")
        let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 40, "HTTPAPI's files were not found (\(files.count))")
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? line
                for type in types where code.range(of: "(?<![A-Za-z0-9_])\(type)(\\(|\\.init\\()", options: .regularExpression) != nil {
                    Issue.record("HTTPAPI/\(file) builds the use case \(type): \(line)")
                }
            }
        }
    }
}

@Suite("README and docs/")
struct DocsTests {
    /// 250 lines of prose and walk-throughs, plus the two answer-verification snippets the app
    /// copies (JS and Swift, checked against their files by SignedAnswerTests).
    @Test("the README is a front door: at most 250 lines besides the verification snippets, and every document it links exists")
    func readmeFrontDoor() throws {
        let readme = try String(contentsOf: Harness.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let snippets = try ["docs/snippets/verify-berth-answer.js", "Tests/HTTPAPITests/VerifyBerthAnswer.swift"].map {
            try String(contentsOf: Harness.repository.appendingPathComponent($0), encoding: .utf8).split(
                separator: "\n",
                omittingEmptySubsequences: false
            ).count - 1
        }.reduce(0, +)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count - (readme.hasSuffix("\n") ? 1 : 0) - snippets <= 250)
        let links = readme.components(separatedBy: "](").dropFirst().compactMap { $0.split(separator: ")").first.map(String.init) }.filter {
            !$0.hasPrefix("http")
        }
        #expect(links.count >= 9)
        for link in links {
            // A link to a heading: the document must exist and hold the heading.
            let parts = link.split(separator: "#", maxSplits: 1).map(String.init)
            let url = Harness.repository.appendingPathComponent(parts[0])
            #expect(FileManager.default.fileExists(atPath: url.path), "README links \(link)")
            if parts.count == 2 {
                let headings =
                    (try? String(contentsOf: url, encoding: .utf8))?.split(separator: "\n").filter { $0.hasPrefix("#") }
                    .map {
                        $0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased().filter {
                            $0.isLetter || $0.isNumber || $0 == " " || $0 == "-"
                        }
                        .replacingOccurrences(of: " ", with: "-")
                    } ?? []
                #expect(headings.contains(parts[1]), "README links \(link): no such heading")
            }
        }
    }

    @Test("docs/configuration.md names every field the catalog decoder reads from products.json (and unlock products' fields)")
    func configurationNamesEveryField() throws {
        let data = try Data(contentsOf: Harness.repository.appendingPathComponent("products.json"))
        var catalog = try JSONDecoder().decode(Catalog.self, from: data)
        catalog.tenants[0].products.append(
            Product(id: "p", kind: .unlock, type: "Non-Renewing Subscription", title: "t", entitlement: "e", durationDays: 1)
        )
        let json = try JSON.parse(try JSONEncoder().encode(catalog))
        var keys = Set<String>()
        func collect(_ value: JSON) {
            if let object = value.members {
                for (key, inner) in object {
                    keys.insert(key)
                    collect(inner)
                }
            } else if let array = value.array {
                array.forEach(collect)
            }
        }
        collect(json)
        #expect(keys.count > 40)
        let document = try String(contentsOf: Harness.repository.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let missing = keys.filter { !document.contains("`\($0)`") && !document.contains("\"\($0)\"") }.sorted()
        #expect(missing.isEmpty, "fields of products.json not in docs/configuration.md: \(missing)")
    }
}
