import Crypto
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import UseCases

/// Signed answers (`answerSigning`): checked here against the documented signed text, rebuilt
/// line by line rather than with Berth's own signer, with the key from the public key route, and by
/// the README's own verification snippets (Swift compiled in this target; JS run by node).
@Suite("Signed answers: entitlements, balances, purchases and validator answers an app can trust")
struct SignedAnswerTests {
    static let tenant = CreditsTests.stylist
    static let keyId = "answers-2026-11"

    static func harness(_ key: P256.Signing.PrivateKey) async throws -> Harness {
        try await Harness.make(
            customize: { catalog in
                guard let index = catalog.tenants.firstIndex(where: { $0.id == tenant }) else { return }
                catalog.tenants[index].answerSigning = AnswerSigningSettings(keyId: keyId, privateKeyEnv: "AISTYLIST_TEST_ANSWER_KEY")
            },
            environment: ["AISTYLIST_TEST_ANSWER_KEY": key.pemRepresentation]
        )
    }

    static func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        auth: String?,
        user: String? = nil,
        nonce: String? = nil,
        json: JSON? = nil
    ) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let auth { headers[.authorization] = "Bearer \(auth)" }
        if let user { headers[HTTPField.Name("X-User-Id")!] = user }
        if let nonce { headers[HTTPField.Name("X-Berth-Nonce")!] = nonce }
        let body = try json.map { ByteBuffer(bytes: try $0.data()) }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
            Reply(status: response.status, data: Data(response.body.readableBytesView), headers: response.headers)
        }
    }

    static func header(_ reply: Reply, _ name: String) -> String? { reply.headers[HTTPField.Name(name)!] }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=",
            with: ""
        )
    }

    /// Whether the reply's signature verifies over the documented text, with these expectations.
    static func verifies(
        _ reply: Reply,
        key: P256.Signing.PublicKey,
        nonce: String,
        user: String,
        method: String,
        path: String,
        body: Data? = nil,
        status: Int? = nil,
        keyId: String = Self.keyId
    ) -> Bool {
        guard let signatureText = header(reply, "X-Berth-Signature"), let signedAt = header(reply, "X-Berth-Signed-At"),
            header(reply, "X-Berth-Key-Id") == keyId
        else { return false }
        var padded = signatureText.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while padded.count % 4 != 0 { padded += "=" }
        guard let raw = Data(base64Encoded: padded), raw.count == 64, let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw) else {
            return false
        }
        let lines = [
            "berth-answer-v1", keyId, nonce, signedAt, String(status ?? Int(reply.status.code)), "\(method) \(path)", user,
            base64URL(Data(SHA256.hash(data: body ?? reply.data))),
        ]
        return key.isValidSignature(signature, for: Data(lines.joined(separator: "\n").utf8))
    }

    /// The reply as the README's Swift snippet takes it.
    static func headers(_ reply: Reply) -> [String: String] {
        Dictionary(reply.headers.map { ($0.name.canonicalName, $0.value) }, uniquingKeysWith: { $1 })
    }

    @Test("the published key is the signing key; an entitlements answer is signed over the documented text, and nothing else verifies")
    func entitlements() async throws {
        let key = P256.Signing.PrivateKey()
        let harness = try await Self.harness(key)
        defer { harness.close() }
        let client = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { http in
            let published = try await Self.call(http, .get, "/api/answer-signing/\(Self.tenant)", auth: nil)
            #expect(published.status == .ok)
            let spki = try #require(published.json["publicKeySPKI"].string)
            #expect(spki == key.publicKey.derRepresentation.base64EncodedString())
            #expect(
                published.json["keyId"].string == Self.keyId && published.json["algorithm"].string == "ES256"
                    && published.json["format"].string == "berth-answer-v1"
            )
            let jwk = try #require(published.json["jwk"].object)
            let point = key.publicKey.x963Representation
            #expect(jwk["x"].string == Self.base64URL(point.dropFirst().prefix(32)) && jwk["y"].string == Self.base64URL(point.dropFirst(33)))
            #expect(jwk["kty"].string == "EC" && jwk["crv"].string == "P-256" && jwk["kid"].string == Self.keyId)
            let pinned = try P256.Signing.PublicKey(derRepresentation: try #require(Data(base64Encoded: spki)))

            let nonce = UUID().uuidString
            let reply = try await Self.call(http, .get, "/api/entitlements", auth: client, user: "ana", nonce: nonce)
            #expect(reply.status == .ok && reply.json["isPremium"].bool == false)
            #expect(Self.header(reply, "X-Berth-Nonce") == nonce)
            #expect(Self.header(reply, "X-Berth-Signed-At") == String(Int64((harness.clock.now().timeIntervalSince1970 * 1000).rounded(.down))))
            #expect(Self.verifies(reply, key: pinned, nonce: nonce, user: "ana", method: "GET", path: "/api/entitlements"))
            // Anything a proxy could change breaks it: the body, the user, the nonce, the route, the status.
            var premium = reply.data
            premium.replaceSubrange(try #require(premium.range(of: Data("\"isPremium\":false".utf8))), with: Data("\"isPremium\":true ".utf8))
            #expect(!Self.verifies(reply, key: pinned, nonce: nonce, user: "ana", method: "GET", path: "/api/entitlements", body: premium))
            #expect(!Self.verifies(reply, key: pinned, nonce: nonce, user: "bo", method: "GET", path: "/api/entitlements"))
            #expect(!Self.verifies(reply, key: pinned, nonce: UUID().uuidString, user: "ana", method: "GET", path: "/api/entitlements"))
            #expect(!Self.verifies(reply, key: pinned, nonce: nonce, user: "ana", method: "GET", path: "/api/credits"))
            #expect(!Self.verifies(reply, key: pinned, nonce: nonce, user: "ana", method: "GET", path: "/api/entitlements", status: 201))
            #expect(
                !Self.verifies(reply, key: P256.Signing.PrivateKey().publicKey, nonce: nonce, user: "ana", method: "GET", path: "/api/entitlements")
            )

            // The README's Swift snippet agrees, and refuses a stale answer.
            let now = harness.clock.now()
            func snippet(body: Data? = nil, user: String = "ana", nonce n: String = nonce, at: Date = now) -> Bool {
                verifyBerthAnswer(
                    body: body ?? reply.data,
                    status: Int(reply.status.code),
                    headers: Self.headers(reply),
                    pinnedKeySPKI: spki,
                    keyId: Self.keyId,
                    nonce: n,
                    userId: user,
                    method: "GET",
                    path: "/api/entitlements",
                    now: at
                )
            }
            #expect(snippet())
            #expect(!snippet(body: premium) && !snippet(user: "bo") && !snippet(nonce: "another-nonce") && !snippet(at: now.addingTimeInterval(301)))

            // Without a nonce the answer is still signed (the line is empty); replaying it is then the app's risk.
            let bare = try await Self.call(http, .get, "/api/entitlements", auth: client, user: "ana")
            #expect(Self.header(bare, "X-Berth-Nonce") == nil)
            #expect(Self.verifies(bare, key: pinned, nonce: "", user: "ana", method: "GET", path: "/api/entitlements"))
        }
    }

    @Test("balances, purchases and validator answers are signed; the validator's user is the plugin's applicationUsername; refusals are signed too")
    func purchasesAndValidator() async throws {
        let key = P256.Signing.PrivateKey()
        let harness = try await Self.harness(key)
        defer { harness.close() }
        let client = try await harness.apiKey(Self.tenant, .client)
        let server = try await harness.apiKey(Self.tenant, .server)
        let pinned = key.publicKey
        try await harness.app().test(.router) { http in
            let jws = try harness.purchase(CreditsTests.starter, transactionId: "3000000000077001", bundleId: CordovaValidatorTests.bundle)
            let bought = try await Self.call(
                http,
                .post,
                "/api/verify-purchase",
                auth: client,
                user: "ana",
                nonce: "n-000001",
                json: ["productId": .string(CreditsTests.starter), "jwsRepresentation": .string(jws)]
            )
            #expect(bought.status == .ok, "\(bought.json)")
            #expect(Self.verifies(bought, key: pinned, nonce: "n-000001", user: "ana", method: "POST", path: "/api/verify-purchase"))
            let replay = try await Self.call(
                http,
                .post,
                "/api/verify-purchase",
                auth: client,
                user: "bo",
                nonce: "n-000002",
                json: ["productId": .string(CreditsTests.starter), "jwsRepresentation": .string(jws)]
            )
            #expect(replay.status == .conflict && replay.errorCode == "transaction_already_used")
            #expect(
                Self.verifies(replay, key: pinned, nonce: "n-000002", user: "bo", method: "POST", path: "/api/verify-purchase"),
                "a refusal is signed with its status"
            )

            let credits = try await Self.call(http, .get, "/api/credits", auth: client, user: "ana", nonce: "n-000003")
            #expect(credits.status == .ok && Self.verifies(credits, key: pinned, nonce: "n-000003", user: "ana", method: "GET", path: "/api/credits"))
            let reserved = try await Self.call(
                http,
                .post,
                "/api/credits/reservations",
                auth: server,
                user: "ana",
                nonce: "n-000010",
                json: ["amount": 1]
            )
            #expect(reserved.status == .created || reserved.status == .ok, "\(reserved.json)")
            #expect(Self.verifies(reserved, key: pinned, nonce: "n-000010", user: "ana", method: "POST", path: "/api/credits/reservations"))
            let v1 = try await Self.call(http, .get, "/v1/credits/balance", auth: client, user: "ana", nonce: "n-000004")
            #expect(v1.status == .ok && Self.verifies(v1, key: pinned, nonce: "n-000004", user: "ana", method: "GET", path: "/v1/credits/balance"))

            // The validator: a server key names no user; the plugin's applicationUsername is whom the answer is about.
            let path = "/api/validator/\(Self.tenant)"
            let second = try harness.purchase(CreditsTests.starter, transactionId: "3000000000077002", bundleId: CordovaValidatorTests.bundle)
            let validated = try await Self.call(
                http,
                .post,
                path,
                auth: server,
                nonce: "n-000005",
                json: CordovaValidatorTests.sk2Body(jws: second, product: CreditsTests.starter, user: "cy")
            )
            #expect(validated.status == .ok && validated.json["ok"].bool == true, "\(validated.json)")
            #expect(Self.verifies(validated, key: pinned, nonce: "n-000005", user: "cy", method: "POST", path: path))
            #expect(Self.header(validated, "X-Berth-Answer-User") == nil, "the handler's note to the signer is not sent")
            // The plugin's refusal shape (HTTP 200, ok: false) is signed like any answer, about the plugin's user too.
            let refused = try await Self.call(
                http,
                .post,
                path,
                auth: server,
                nonce: "n-000006",
                json: CordovaValidatorTests.sk2Body(jws: second, product: CreditsTests.starter, user: "dee")
            )
            #expect(refused.status == .ok && refused.json["ok"].bool == false, "\(refused.json)")
            #expect(Self.verifies(refused, key: pinned, nonce: "n-000006", user: "dee", method: "POST", path: path))
            #expect(
                refused.json["error"]["code"].string == "transaction_already_used",
                "the refusal itself is unchanged: \(refused.json)"
            )

            // A guard's refusal (a server key that names nobody) is signed for no user.
            let nobody = try await Self.call(http, .get, "/api/entitlements", auth: server, nonce: "n-000007")
            #expect(nobody.status == .badRequest && nobody.errorCode == "missing_user")
            #expect(Self.verifies(nobody, key: pinned, nonce: "n-000007", user: "", method: "GET", path: "/api/entitlements"))
        }
    }

    @Test(
        "the shipped seaboo-test and aistylist-test sign with the test keys written in products.json: published, and every answer verifies with them"
    )
    func shippedTestTenantsSign() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let shipped = try Catalog.decode(try Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        try await harness.app().test(.router) { http in
            for (tenant, keyId) in [("seaboo-test", "seaboo-test-1"), ("aistylist-test", "aistylist-test-1")] {
                let settings = try #require(shipped.tenants.first { $0.id == tenant }?.answerSigning)
                #expect(settings.keyId == keyId && settings.privateKeyEnv == nil && settings.privateKeyFileEnv == nil)
                let written = try P256.Signing.PrivateKey(pemRepresentation: try #require(settings.testPrivateKeyPEM))
                let published = try await Self.call(http, .get, "/api/answer-signing/\(tenant)", auth: nil)
                #expect(published.status == .ok && published.json["keyId"].string == keyId)
                let text = try #require(published.json["publicKeySPKI"].string)
                let spki = try #require(Data(base64Encoded: text))
                #expect(try P256.Signing.PublicKey(derRepresentation: spki).rawRepresentation == written.publicKey.rawRepresentation)
                let client = try await harness.apiKey(tenant, .client)
                let reply = try await Self.call(http, .get, "/api/entitlements", auth: client, user: "ana", nonce: "shipped-\(tenant)")
                #expect(reply.status == .ok && Self.header(reply, "X-Berth-Key-Id") == keyId)
                #expect(
                    Self.verifies(
                        reply,
                        key: written.publicKey,
                        nonce: "shipped-\(tenant)",
                        user: "ana",
                        method: "GET",
                        path: "/api/entitlements",
                        keyId: keyId
                    )
                )
            }
        }
    }

    @Test("a malformed nonce is refused before the route runs; tenants without answerSigning answer unsigned and publish no key")
    func nonceAndUnsignedTenants() async throws {
        let harness = try await Self.harness(P256.Signing.PrivateKey())
        defer { harness.close() }
        let client = try await harness.apiKey(Self.tenant, .client)
        let zorya = try await harness.apiKey("zorya-test", .client)
        try await harness.app().test(.router) { http in
            let jws = try harness.purchase(CreditsTests.starter, transactionId: "3000000000077003", bundleId: CordovaValidatorTests.bundle)
            for bad in ["short", String(repeating: "a", count: 129), "has space 123", "line\u{1}break99"] {
                let reply = try await Self.call(
                    http,
                    .post,
                    "/api/verify-purchase",
                    auth: client,
                    user: "ana",
                    nonce: bad,
                    json: ["productId": .string(CreditsTests.starter), "jwsRepresentation": .string(jws)]
                )
                #expect(
                    reply.status == .badRequest && reply.errorCode == "invalid_field" && reply.errorField == "X-Berth-Nonce",
                    "\(bad): \(reply.json)"
                )
            }
            let balance = try await Self.call(http, .get, "/api/credits", auth: client, user: "ana", nonce: "a1b2c3d4")
            let starter = (balance.json["credits"].array)?.first?["balance"].int
            #expect(starter == 2, "the refused purchases applied nothing (the two free credits only): \(balance.json)")
            let good = try await Self.call(
                http,
                .post,
                "/api/verify-purchase",
                auth: client,
                user: "ana",
                nonce: "AZaz09+/=-_.~",
                json: ["productId": .string(CreditsTests.starter), "jwsRepresentation": .string(jws)]
            )
            #expect(good.status == .ok && Self.header(good, "X-Berth-Nonce") == "AZaz09+/=-_.~")

            // zorya-test does not sign: no signature, and its nonce header is not read.
            let unsigned = try await Self.call(http, .get, "/api/entitlements", auth: zorya, user: "ana", nonce: "bad nonce")
            #expect(unsigned.status == .ok)
            #expect(Self.header(unsigned, "X-Berth-Signature") == nil && Self.header(unsigned, "X-Berth-Signed-At") == nil)
            for tenant in ["zorya-test", "nobody"] {
                let key = try await Self.call(http, .get, "/api/answer-signing/\(tenant)", auth: nil)
                #expect(key.status == .notFound && key.errorCode == "not_found")
            }
            // Operators' and other routes are not signed, even for a signing tenant.
            let products = try await Self.call(http, .get, "/api/products", auth: client, nonce: "a1b2c3d4")
            #expect(products.status == .ok && Self.header(products, "X-Berth-Signature") == nil)
        }
    }

    @Test("answerSigning is checked in the catalog, and a tenant that signs does not start without its key")
    func configuration() async throws {
        var catalog = try Catalog.decode(try Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        let index = try #require(catalog.tenants.firstIndex { $0.id == Self.tenant })
        for (settings, message) in [
            (AnswerSigningSettings(keyId: "bad id", privateKeyEnv: "K"), "answerSigning.keyId"),
            (AnswerSigningSettings(keyId: "k1"), "exactly one of"),
            (AnswerSigningSettings(keyId: "k1", privateKeyEnv: "K", privateKeyFileEnv: "F"), "exactly one of"),
            (AnswerSigningSettings(keyId: "k1", privateKeyEnv: "K", testPrivateKeyPEM: "PEM"), "exactly one of"),
        ] {
            catalog.tenants[index].answerSigning = settings
            #expect { try catalog.validate() } throws: { "\($0)".contains(message) }
        }
        // A key written in the catalog is for test tenants: refused where Production purchases are accepted.
        var production = catalog
        production.tenants[index].apple.environments = [.production, .sandbox]
        production.tenants[index].apple.appAppleId = 1_478_223_901
        production.tenants[index].apple.trustedRootFiles = nil
        production.tenants[index].answerSigning = AnswerSigningSettings(keyId: "k1", testPrivateKeyPEM: P256.Signing.PrivateKey().pemRepresentation)
        #expect { try production.validate() } throws: { "\($0)".contains("testPrivateKeyPEM is a key everyone can read") }
        production.tenants[index].answerSigning = AnswerSigningSettings(keyId: "k1", privateKeyEnv: "K")
        try production.validate()
        catalog.tenants[index].answerSigning = nil
        let tenant = catalog.tenants[index]
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        func start(_ settings: AnswerSigningSettings, _ environment: [String: String]) async throws -> TenantRuntime {
            var signing = tenant
            signing.answerSigning = settings
            return try await TenantRuntime(
                tenant: signing,
                baseDirectory: Harness.repository,
                environment: environment,
                httpClient: Harness.outbound,
                logger: logger
            )
        }
        await #expect { _ = try await start(.init(keyId: "k1", privateKeyEnv: "ANSWER_KEY"), [:]) } throws: { "\($0)".contains("set ANSWER_KEY") }
        await #expect { _ = try await start(.init(keyId: "k1", privateKeyEnv: "ANSWER_KEY"), ["ANSWER_KEY": "not a key"]) } throws: {
            "\($0)".contains("not a PEM P-256 private key")
        }
        await #expect {
            _ = try await start(.init(keyId: "k1", privateKeyFileEnv: "ANSWER_KEY_FILE"), ["ANSWER_KEY_FILE": "/nonexistent/answer.pem"])
        } throws: {
            "\($0)".contains("/nonexistent/answer.pem")
        }
        let key = P256.Signing.PrivateKey()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("berth-answer-\(UUID().uuidString).pem")
        try Data(key.pemRepresentation.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try await start(.init(keyId: "k1", privateKeyFileEnv: "ANSWER_KEY_FILE"), ["ANSWER_KEY_FILE": file.path])
        #expect(fromFile.answerSigner?.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        let absent = try await TenantRuntime(
            tenant: tenant,
            baseDirectory: Harness.repository,
            environment: [:],
            httpClient: Harness.outbound,
            logger: logger
        )
        #expect(absent.answerSigner == nil)
    }
}

/// The README's verification snippets are the checked ones: the Swift one is this target's
/// VerifyBerthAnswer.swift (compiled, used above); the JS one, docs/snippets/verify-berth-answer.js,
/// runs in node against a real answer.
@Suite("Signed answers: the README's verification snippets")
struct AnswerSnippetTests {
    static func readmeBlocks() throws -> [String] {
        let readme = try String(contentsOf: Harness.repository.appendingPathComponent("README.md"), encoding: .utf8)
        return readme.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
    }

    @Test("the README quotes both snippet files whole")
    func quoted() throws {
        let blocks = try Self.readmeBlocks()
        for (language, file) in [("js", "docs/snippets/verify-berth-answer.js"), ("swift", "Tests/HTTPAPITests/VerifyBerthAnswer.swift")] {
            let text = try String(contentsOf: Harness.repository.appendingPathComponent(file), encoding: .utf8)
            #expect(blocks.contains(language + "\n" + text), "README.md quotes \(file) in a ```\(language) block, unchanged")
        }
    }

    @Test("the JS snippet (WebCrypto, in node) accepts a genuine answer and refuses a changed body, another user, another nonce, a stale one")
    func javascript() async throws {
        guard
            let node = ["/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            if ProcessInfo.processInfo.environment["BERTH_REQUIRE_NODE"] == "1" { Issue.record("node is required (BERTH_REQUIRE_NODE=1)") }
            print("SignedAnswerTests: WARNING: node not found: the JS snippet check is SKIPPED")
            return
        }
        let key = P256.Signing.PrivateKey()
        let harness = try await SignedAnswerTests.harness(key)
        defer { harness.close() }
        let client = try await harness.apiKey(SignedAnswerTests.tenant, .client)
        let nonce = UUID().uuidString
        let reply = try await harness.app().test(.router) { http in
            try await SignedAnswerTests.call(http, .get, "/api/entitlements", auth: client, user: "ana", nonce: nonce)
        }
        #expect(reply.status == .ok)
        let now = (harness.clock.now().timeIntervalSince1970 * 1000).rounded(.down)
        let tampered = String(decoding: reply.data, as: UTF8.self).replacingOccurrences(of: "\"isPremium\":false", with: "\"isPremium\":true")
        func options(user: String = "ana", nonce n: String = nonce, now at: Double = now) -> JSON {
            [
                "publicKeySPKI": .string(key.publicKey.derRepresentation.base64EncodedString()), "keyId": .string(SignedAnswerTests.keyId),
                "nonce": .string(n), "userId": .string(user),
                "method": "GET", "path": "/api/entitlements", "now": .double(at),
            ]
        }
        let body = reply.data.base64EncodedString()
        let cases: [JSON] = [
            ["name": "genuine", "body": .string(body), "options": options()],
            ["name": "changed body", "body": .string(Data(tampered.utf8).base64EncodedString()), "options": options()],
            ["name": "another user", "body": .string(body), "options": options(user: "bo")],
            ["name": "another nonce", "body": .string(body), "options": options(nonce: UUID().uuidString)],
            ["name": "stale", "body": .string(body), "options": options(now: now + 600_000)],
        ]
        let input: JSON = [
            "status": .int(Int(reply.status.code)), "headers": .object(SignedAnswerTests.headers(reply).mapValues(JSON.string)),
            "cases": .array(cases),
        ]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-snippet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let snippet = try String(contentsOf: Harness.repository.appendingPathComponent("docs/snippets/verify-berth-answer.js"), encoding: .utf8)
        let driver = """
            const input = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
            (async () => {
              for (const c of input.cases) {
                const response = new Response(Buffer.from(c.body, 'base64'), { status: input.status, headers: input.headers });
                try {
                  const answer = await verifyBerthAnswer(response, c.options);
                  console.log(`${c.name}: accepted isPremium=${answer.isPremium}`);
                } catch (error) {
                  console.log(`${c.name}: refused (${error.message})`);
                }
              }
            })();
            """
        try Data((snippet + "\n" + driver).utf8).write(to: directory.appendingPathComponent("check.js"))
        try input.data().write(to: directory.appendingPathComponent("input.json"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments = [directory.appendingPathComponent("check.js").path, directory.appendingPathComponent("input.json").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(process.terminationStatus == 0, "\(lines)")
        #expect(
            lines == [
                "genuine: accepted isPremium=false",
                "changed body: refused (the answer was changed on its way)",
                "another user: refused (the answer was changed on its way)",
                "another nonce: refused (the answer was changed on its way)",
                "stale: refused (the answer is stale)",
            ],
            "\(lines)"
        )
    }
}

extension SignedAnswerTests {
    @Test("T9: the signature covers the query string as sent: an answer to ?limit=1&offset=5 does not verify as the answer to the plain request")
    func queryIsSigned() async throws {
        let key = P256.Signing.PrivateKey()
        let harness = try await Self.harness(key)
        defer { harness.close() }
        let client = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { http in
            let nonce = UUID().uuidString
            let paged = try await Self.call(http, .get, "/api/credits/transactions?limit=1&offset=5", auth: client, user: "ana", nonce: nonce)
            #expect(paged.status == .ok, "\(paged.json)")
            #expect(
                !Self.verifies(paged, key: key.publicKey, nonce: nonce, user: "ana", method: "GET", path: "/api/credits/transactions"),
                "a proxy cannot pass the answer to another question off as the answer to the app's"
            )
            #expect(
                Self.verifies(paged, key: key.publicKey, nonce: nonce, user: "ana", method: "GET", path: "/api/credits/transactions?limit=1&offset=5")
            )
            let plain = try await Self.call(http, .get, "/api/credits/transactions", auth: client, user: "ana", nonce: nonce)
            #expect(Self.verifies(plain, key: key.publicKey, nonce: nonce, user: "ana", method: "GET", path: "/api/credits/transactions"))
        }
    }
}
