// libFuzzer target: the spec compiler's front end (YAML reader and checker, Sources/FormSpec),
// fed arbitrary text. Built by Fuzz/run.sh.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSpecChecker(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let result = SpecLoader.check(text: text, path: "Fuzz.yaml")
    for diagnostic in result.diagnostics {
        precondition(diagnostic.location.line >= 1 && diagnostic.location.column >= 1, "a diagnostic without a position")
    }
    return 0
}
