#!/usr/bin/env bash
# Builds one libFuzzer target with -sanitize=fuzzer,address and runs it for SECONDS.
#   Fuzz/run.sh http 600     # the reference server's HTTP request parser
#   Fuzz/run.sh spec 600     # the spec compiler's YAML reader (Swift) and checker
#   Fuzz/run.sh json 600     # the device's JSON slicer (change-feed pages), against Foundation
#   Fuzz/run.sh pattern 600  # the pattern engine, against a second reading of the same tree
# Crashes are written to .build/fuzz/<target>/ as crash-*; the corpus grows in
# .build/fuzz/<target>/corpus (seeded from Fuzz/seeds/<target> or FormSpecs/).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/run.sh http|spec|json|pattern SECONDS}
seconds=${2:-60}
work=.build/fuzz/$target
mkdir -p "$work/corpus"
case "$target" in
  http)
    # The error codes are a module of their own that FormSyncHTTP imports: built first.
    mkdir -p "$work/modules"
    swiftc -sanitize=fuzzer,address -parse-as-library -module-name FormSyncProtocol -package-name FormSync -O -g -wmo \
      -emit-module -emit-module-path "$work/modules/FormSyncProtocol.swiftmodule" -c Sources/FormSyncProtocol/*.swift -o "$work/modules/FormSyncProtocol.o"
    sources=(Sources/FormSyncHTTP/HTTPRequestParser.swift Sources/FormSyncHTTP/HTTPMessage.swift Sources/FormSyncHTTP/HTTPBodyStream.swift Fuzz/http/Entry.swift)
    flags=(-I "$work/modules" "$work/modules/FormSyncProtocol.o")
    cp -n Fuzz/seeds/http/* "$work/corpus/" 2>/dev/null || true
    ;;
  spec)
    # The pattern engine is a module of its own that FormSpec imports: built first, instrumented.
    mkdir -p "$work/modules"
    swiftc -sanitize=fuzzer,address -parse-as-library -module-name FormSyncPattern -package-name FormSync -O -g -wmo \
      -emit-module -emit-module-path "$work/modules/FormSyncPattern.swiftmodule" -c Sources/FormSyncPattern/*.swift -o "$work/modules/FormSyncPattern.o"
    sources=(Sources/FormSpec/*.swift Fuzz/spec/Entry.swift)
    flags=(-I "$work/modules" "$work/modules/FormSyncPattern.o")
    cp -n FormSpecs/*.yaml Tests/FormSpecTests/BrokenSpecs/*.yaml "$work/corpus/" 2>/dev/null || true
    ;;
  json)
    sources=(Sources/FormSyncModel/JSONObjectSlices.swift Sources/FormSyncModel/JSONOutput.swift Fuzz/json/Entry.swift)
    flags=()
    cp -n Fuzz/seeds/json/* "$work/corpus/" 2>/dev/null || true
    ;;
  pattern)
    sources=(Sources/FormSyncPattern/*.swift Fuzz/pattern/Entry.swift)
    flags=()
    cp -n Fuzz/seeds/pattern/* "$work/corpus/" 2>/dev/null || true
    ;;
  *) echo "unknown target '$target' (http, spec, json or pattern)" >&2; exit 2 ;;
esac
swiftc -sanitize=fuzzer,address -parse-as-library -module-name FuzzTarget -package-name FormSync -O -g "${sources[@]}" "${flags[@]}" -o "$work/fuzzer"
cd "$work"
# detect_leaks=0: NSRegularExpression leaks its buffer when a pattern fails to compile
# (swift-corelibs-foundation), which would stop every run on the first invalid pattern.
# -timeout=10: an input that takes ten seconds is a finding (the engines are linear).
ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no ./fuzzer -max_total_time="$seconds" -timeout=10 -detect_leaks=0 -print_final_stats=1 -artifact_prefix=./ corpus
