#!/usr/bin/env bash
# Builds Examples/FieldApp (its tests too, which use FormSyncTesting) and runs its binary
# against `formsync serve --specs Examples/FieldApp/Specs`: a scoped pull, a visit with a
# photo, an edit of a pulled record, all sent. A step of Scripts/test (the test command); it runs
# after `swift test`, not beside it, since it compiles FormSync a second time.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
app="$root/Examples/FieldApp"
formsync="$root/.build/debug/formsync"
[ -x "$formsync" ] || { echo "check.sh: build formsync first (swift build)" >&2; exit 2; }

# SwiftPM does not re-plan this package's build when a file is added to or removed from
# FormSync (its path dependency): the build then fails to find the new file's types. When the
# list of FormSync's source files changed since the last build here, start from a clean .build.
stamp="$app/.build/formsync-sources.list"
sources="$(cd "$root" && find Sources -name '*.swift' | LC_ALL=C sort)"
if [ -d "$app/.build" ] && [ "$(cat "$stamp" 2>/dev/null)" != "$sources" ]; then
  echo "check.sh: FormSync's source files changed since the last build; building Examples/FieldApp from clean"
  rm -rf "$app/.build"
fi
swift build --build-tests --package-path "$app"
printf '%s' "$sources" > "$stamp"

work="$(mktemp -d)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cat > "$work/seed.json" <<'JSON'
[{"type":"Trap","workspace":"pest","record":{"technician":"tech-1","site":"LIS-001","status":"active","bait_level":80}},
 {"type":"Trap","workspace":"pest","record":{"technician":"tech-2","site":"LIS-002","status":"active"}}]
JSON
"$formsync" serve --port 0 --db "$work/db" --workspace pest --specs "$app/Specs" --records "$work/seed.json" --principal tech-1 > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  grep -q "access token:" "$work/serve.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "forms: PestControlVisit v1, TrapCheck v1" "$work/serve.log" || { echo "check.sh: the server did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
link="$(grep '^enrolment link' "$work/serve.log" | awk '{print $NF}')"
[ -n "$link" ] || { echo "check.sh: the server printed no enrolment link:" >&2; cat "$work/serve.log" >&2; exit 1; }

output="$("$app/.build/debug/FieldApp" --link "$link" --db "$work/app.sqlite")"
echo "$output"
grep -q "pulled 1 records; 1 active traps" <<<"$output"      # the other technician's trap stays on the server
grep -q "sent 3, parked 0; trap now at 20%" <<<"$output"
echo "Examples/FieldApp: built, and synced against serve --specs: OK"
