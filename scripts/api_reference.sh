#!/usr/bin/env bash
# Generates the API reference (HTML) from the public headers,
# include/grpc_resilience/*.h, with Doxygen (Debian package doxygen,
# scripts/common.sh installs it), and fails when Doxygen warns: a public
# class, function, enum, enumerator, member or alias without a comment, or a
# comment Doxygen cannot read. Only documented symbols are extracted
# (EXTRACT_ALL=NO) and every undocumented one is a warning
# (WARN_IF_UNDOCUMENTED=YES; enumerators, which Doxygen lets pass, are looked
# for in its XML output), so the reference shows the whole public API.
#
#   scripts/api_reference.sh [OUT_DIR]   default: build/api-reference
#
# Writes OUT_DIR/html/index.html and OUT_DIR/warnings.log (Doxygen's
# warnings, empty when it passes). Exits 0 with no warning, 1 with any
# (they are printed), 77 when doxygen is not installed (a skip for ctest's
# api_reference test), except under RESILIENCE_CI=1 (.ci/run), where a
# missing doxygen fails. DOXYGEN names another doxygen binary.
set -euo pipefail

# Doxygen's INPUT_FILTER (below) rewrites what doxygen reads of a header,
# keeping its line count (and so the warnings' line numbers):
#   - the headers' abseil-style name headings, a comment's first line that is
#     only the declaration's name ("Stats()", "Counter() / Gauge() /
#     Histogram()", "LogEvents") followed by an empty comment line, are
#     blanked, so that the description's first sentence becomes the brief;
#   - "e.g." in comment text (not in \code) becomes "e.g.\ ",
#     doxygen's way of saying that the sentence, and so the brief, goes on.
if [ "${1:-}" = "--filter" ]; then
  exec awk '
    { line[NR] = $0 }
    END {
      name = "~?[A-Za-z_][A-Za-z0-9_]*(\\(\\))?"
      heading = "^[ \t]*/// " name "( / " name ")*[ \t]*$"
      block = 0
      for (i = 1; i <= NR; i++) {
        if (line[i] ~ /^[ \t]*\/\/\/[ \t]*\\code/) block = 1
        if (line[i] ~ /^[ \t]*\/\/\/[ \t]*\\endcode/) block = 0
        if (line[i] ~ heading && line[i + 1] ~ /^[ \t]*\/\/\/[ \t]*$/) sub(/\/\/\/.*/, "///", line[i])
        if (!block && line[i] ~ /\/\/\//) {
          gsub(/e\.g\. /, "e.g.\\ ", line[i])
          sub(/e\.g\.$/, "e.g.\\ ", line[i])
        }
        print line[i]
      }
    }' "$2"
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/build/api-reference}"
doxygen="${DOXYGEN:-doxygen}"

if ! command -v "$doxygen" >/dev/null 2>&1; then
  reason="api_reference: '$doxygen' not found (Debian package doxygen; scripts/test.sh installs it)"
  if [ "${RESILIENCE_CI:-0}" = "1" ]; then
    echo "$reason: required in CI" >&2
    exit 1
  fi
  echo "$reason: skipped" >&2
  exit 77
fi

version="$(sed -n 's/^project(grpc_resilience VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/warnings.log"
rm -rf "$out/html" "$out/xml"
: > "$log"

# The configuration, read from standard input: only what differs from
# Doxygen's defaults. The thread-safety annotations are expanded to nothing
# so that they do not read as part of a declaration.
status=0
"$doxygen" - > "$out/doxygen.out" 2>&1 <<EOF || status=$?
PROJECT_NAME           = grpc-resilience
PROJECT_NUMBER         = $version
PROJECT_BRIEF          = "Retry, timeout and circuit breaker for gRPC C++ clients; throttling and fault injection for servers"
OUTPUT_DIRECTORY       = $out
INPUT                  = $repo/include/grpc_resilience
FILE_PATTERNS          = *.h
RECURSIVE              = NO
STRIP_FROM_PATH        = $repo/include
STRIP_FROM_INC_PATH    = $repo/include
FULL_PATH_NAMES        = YES
JAVADOC_AUTOBRIEF      = YES
EXTRACT_ALL            = NO
EXTRACT_PRIVATE        = NO
EXTRACT_STATIC         = NO
HIDE_UNDOC_MEMBERS     = NO
HIDE_UNDOC_CLASSES     = NO
HIDE_FRIEND_COMPOUNDS  = YES
SORT_MEMBER_DOCS       = NO
QUIET                  = YES
WARNINGS               = YES
WARN_IF_UNDOCUMENTED   = YES
WARN_IF_DOC_ERROR      = YES
WARN_IF_INCOMPLETE_DOC = YES
WARN_NO_PARAMDOC       = NO
WARN_AS_ERROR          = FAIL_ON_WARNINGS
WARN_LOGFILE           = $log
ENABLE_PREPROCESSING   = YES
MACRO_EXPANSION        = YES
EXPAND_ONLY_PREDEF     = YES
PREDEFINED             = "GRPC_RESILIENCE_EXPORT=" "ABSL_GUARDED_BY(x)=" "ABSL_LOCKS_EXCLUDED(x)=" "ABSL_EXCLUSIVE_LOCKS_REQUIRED(x)="
GENERATE_HTML          = YES
GENERATE_LATEX         = NO
GENERATE_XML           = YES
XML_PROGRAMLISTING     = NO
GENERATE_TREEVIEW      = YES
SEARCHENGINE           = YES
HAVE_DOT               = NO
INPUT_FILTER           = "bash $repo/scripts/api_reference.sh --filter"
DISTRIBUTE_GROUP_DOC   = YES
EOF

# Doxygen does not warn about an undocumented enumerator of a documented
# enum: its XML output is read for those, and each is added to the log as a
# warning of the same form.
if [ -d "$out/xml" ]; then
  python3 - "$out/xml" "$repo/include" >> "$log" <<'PYEOF'
import glob, sys
import xml.etree.ElementTree as ET

seen = set()
for path in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    for enum in ET.parse(path).iter("memberdef"):
        if enum.get("kind") != "enum" or enum.get("id") in seen:
            continue
        seen.add(enum.get("id"))
        where = enum.find("location")
        for value in enum.findall("enumvalue"):
            text = "".join("".join(value.find(d).itertext())
                           for d in ("briefdescription", "detaileddescription"))
            if not text.strip():
                print(f"{sys.argv[2]}/{where.get('file')}:{where.get('line')}: warning: Enumerator "
                      f"{value.findtext('name')} of enum {enum.findtext('qualifiedname')} "
                      f"is not documented.")
PYEOF
fi

# Doxygen's own exit status fails on warnings (FAIL_ON_WARNINGS); the log is
# counted as well, so that a warning fails whatever this doxygen's version
# does with that setting.
warnings="$(grep -c -E '(warning|error):' "$log" || true)"
if [ "$status" -ne 0 ] || [ "$warnings" -ne 0 ]; then
  cat "$log" >&2
  [ -s "$log" ] || cat "$out/doxygen.out" >&2
  echo "api_reference: $warnings warning(s) over $repo/include/grpc_resilience" \
       "(doxygen $("$doxygen" --version), exit status $status)" >&2
  exit 1
fi
echo "api_reference: 0 warnings; $out/html/index.html"
