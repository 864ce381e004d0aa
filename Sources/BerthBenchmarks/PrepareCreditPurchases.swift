import AppleSignedData
import Foundation
import TestKit

/// Writes `count` verify-purchase requests for a credit pack, one per line (user id, a tab, the JSON
/// body), each with its own freshly signed transaction; users are `<prefix><index>`. Nothing is sent:
/// the server sees each purchase first when a load tool posts it (benchmarks/soak).
func prepareCreditPurchases(caDirectory: String, count: Int, output: String, bundleId: String, productId: String, userPrefix: String) throws {
    let ca = try TestCA.load(from: URL(fileURLWithPath: caDirectory))
    let began = Date()
    var text = ""
    text.reserveCapacity(count * 2_200)
    for index in 0..<count {
        let jws = try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: productId))
        text += "\(userPrefix)\(index)\t{\"productId\":\"\(productId)\",\"jwsRepresentation\":\"\(jws)\"}\n"
    }
    try Data(text.utf8).write(to: URL(fileURLWithPath: output))
    let seconds = Date().timeIntervalSince(began)
    print(String(format: "signed %d credit-pack purchases in %.1f s into %@", count, seconds, output))
}
