/// The currencies of ISO 4217 (list one, the codes in use), each with the number of digits of
/// its minor unit: what turns a money constant written in major units (`money(12.50, 'EUR')`)
/// into the minor units every money value is held in, and what a preview shows amounts by.
public enum CurrencyTable {
    /// The digits of `code`'s minor unit (2 for EUR, 0 for JPY, 3 for KWD); nil for a code that
    /// is not a currency in use.
    public static func minorDigits(_ code: String) -> Int? {
        guard code.utf8.count == 3 else { return nil }
        if let digits = exceptions[code] { return digits }
        return twoDigits.contains(code) ? 2 : nil
    }

    /// Every code, with its digits, in alphabetical order.
    public static var all: [(code: String, digits: Int)] {
        (twoDigits.map { ($0, 2) } + exceptions.map { ($0.key, $0.value) }).sorted { $0.0 < $1.0 }
    }

    static let exceptions: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0, "UGX": 0, "UYI": 0,
        "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
        "CLF": 4, "UYW": 4,
    ]

    static let twoDigits: Set<String> = [
        "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BMD", "BND", "BOB", "BOV",
        "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHE", "CHF", "CHW", "CNY", "COP", "COU", "CRC", "CUP", "CVE", "CZK",
        "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GTQ", "GYD", "HKD", "HNL",
        "HTG", "HUF", "IDR", "ILS", "INR", "IRR", "JMD", "KES", "KGS", "KHR", "KPW", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL",
        "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO",
        "NOK", "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB", "SAR", "SBD", "SCR", "SDG", "SEK",
        "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TOP", "TRY", "TTD", "TWD", "TZS",
        "UAH", "USD", "USN", "UYU", "UZS", "VED", "VES", "WST", "XCD", "XCG", "YER", "ZAR", "ZMW", "ZWG",
    ]

    /// `amount` (digits with at most one `.`, as an expression writes a number, and an optional
    /// leading `-`) in minor units of a currency with `digits` digits; nil when it has more
    /// fractional digits than the currency, or does not fit a 64-bit integer.
    public static func minorUnits(_ amount: String, digits: Int) -> Int64? {
        var text = Substring(amount)
        let negative = text.hasPrefix("-")
        if negative { text = text.dropFirst() }
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : ""
        guard !whole.isEmpty, fraction.count <= digits, (whole + fraction).utf8.allSatisfy({ (48...57).contains($0) }),
            whole.count + digits <= 19
        else { return nil }
        var value: Int64 = 0
        for byte in (whole + fraction + String(repeating: "0", count: digits - fraction.count)).utf8 {
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (plus, overflowB) = times.addingReportingOverflow(Int64(byte - 48))
            guard !overflowA, !overflowB else { return nil }
            value = plus
        }
        return negative ? -value : value
    }
}
