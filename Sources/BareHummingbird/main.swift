// The HTTP stack alone, for benchmarks/run's "× bare" column: Hummingbird with the same
// dependencies as Berth (the same NIO, the same HTTP/1 server settings) and one route,
// GET /healthz, answering the same small JSON document Berth's does. Nothing of Berth is in it:
// what Berth costs per request beyond this is Berth's own.
//
//     BareHummingbird [--port N]     # 127.0.0.1, default port 18090
import Foundation
import Hummingbird
import Logging

let arguments = Array(CommandLine.arguments.dropFirst())
var port = 18090
if let index = arguments.firstIndex(of: "--port"), index + 1 < arguments.count {
    guard let value = Int(arguments[index + 1]), (1...65_535).contains(value) else {
        FileHandle.standardError.write(Data("BareHummingbird: --port needs a port number (1-65535)\n".utf8))
        exit(2)
    }
    port = value
}

var logger = Logger(label: "bare")
logger.logLevel = .error
let router = Router()
router.get("/healthz") { _, _ in
    Response(
        status: .ok,
        headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#))
    )
}
let application = Application(
    router: router,
    server: .http1(configuration: .init(idleTimeout: .seconds(60))),
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "Bare"),
    logger: logger
)
try await application.runService()
