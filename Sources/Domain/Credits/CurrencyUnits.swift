import Foundation

/// How many digits follow the decimal point in an ISO 4217 currency's amounts, for turning minor
/// units (Berth's prices) into currency units (what some clients show).
public enum CurrencyUnits {
    /// Currencies whose minor unit is the unit itself (ISO 4217 exponent 0).
    static let wholeUnits: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF",
        "XOF", "XPF",
    ]
    /// Currencies with three decimal digits (ISO 4217 exponent 3).
    static let thousandths: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]

    public static func fractionDigits(_ currency: String) -> Int {
        let code = currency.uppercased()
        if wholeUnits.contains(code) { return 0 }
        if thousandths.contains(code) { return 3 }
        return 2
    }

    /// Minor units in milliunits (thousandths of the unit, as Apple signs prices): 13500 EUR →
    /// 135000; saturating rather than trapping on absurd amounts.
    public static func milliunits(minor: Int64, currency: String) -> Int64 {
        var milli = minor
        for _ in fractionDigits(currency)..<3 {
            let (next, overflow) = milli.multipliedReportingOverflow(by: 10)
            milli = overflow ? (minor < 0 ? .min : .max) : next
        }
        return milli
    }

    /// `13500` EUR → `135.00 EUR`, `25000` VND → `25000 VND`: every fraction digit the currency has.
    public static func text(minor: Int64, currency: String) -> String {
        let digits = fractionDigits(currency)
        let sign = minor < 0 ? "-" : ""
        let magnitude = minor.magnitude
        var scale: UInt64 = 1
        for _ in 0..<digits { scale *= 10 }
        let whole = magnitude / scale, fraction = magnitude % scale
        guard digits > 0 else { return "\(sign)\(whole) \(currency)" }
        let padded = String(repeating: "0", count: max(0, digits - String(fraction).count)) + String(fraction)
        return "\(sign)\(whole).\(padded) \(currency)"
    }

    /// `minor` in currency units, exact (Decimal): 99 USD → 0.99, 25000 VND → 25000, 1500 KWD → 1.5.
    public static func amount(minor: Int64, currency: String) -> Decimal {
        var value = Decimal(minor)
        for _ in 0..<fractionDigits(currency) { value /= 10 }
        return value
    }
}
