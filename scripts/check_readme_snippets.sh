#!/usr/bin/env bash
# Compiles every ```cpp block of README.md and of the guide's pages that
# show whole snippets (docs/getting-started.md, docs/replicas.md), or of the
# Markdown files given, against an installed grpc_resilience, so that the
# documentation's code keeps compiling with the public headers.
#
#   scripts/check_readme_snippets.sh PREFIX [FILE.md ...]
#
# PREFIX is an install prefix of the library (cmake --install BUILD --prefix
# PREFIX; scripts/consumer.sh makes one and calls this). Each block is checked
# with g++ -fsyntax-only -I PREFIX/include and gRPC's flags, as follows:
#  - its #include lines go to the top of a file, after a prelude: the
#    standard library, "grpcpp/grpcpp.h", the cache example's generated code
#    ("cache/v1/cache.grpc.pb.h", generated here from proto/) and
#    MyCacheService, an empty sync implementation of cache::v1::CacheService;
#  - the rest becomes the body of a function returning int (so a snippet may
#    `return 2;`), unless the block defines main(): then it is the file;
#  - a line that is only `...` (and maybe a comment) stands for code left out.
# The prelude holds none of the library's headers: a snippet includes the
# ones it needs. Errors name the Markdown file and line. Blocks fenced as
# anything but ```cpp (```c++, ```text) are not checked.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if [ $# -lt 1 ] || [ ! -d "$1/include/grpc_resilience" ]; then
  echo "usage: $0 PREFIX [FILE.md ...]   (PREFIX: where grpc_resilience is installed)" >&2
  exit 2
fi
prefix="$(cd "$1" && pwd)"
shift
files=("$@")
if [ "${#files[@]}" -eq 0 ]; then
  files=("$REPO_ROOT/README.md" "$REPO_ROOT/docs/getting-started.md" "$REPO_ROOT/docs/replicas.md")
fi

ensure_packages g++ pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
  protobuf-compiler libabsl-dev

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The example's service, which the snippets use as "your" service.
protoc -I "$REPO_ROOT/proto" --cpp_out="$work" --grpc_out="$work" \
  --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
  "$REPO_ROOT/proto/cache/v1/cache.proto"

cat > "$work/readme_prelude.h" <<'EOF'
// What every README snippet may take as given (scripts/check_readme_snippets.sh).
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "cache/v1/cache.grpc.pb.h"

// The user's service of the server snippet.
class MyCacheService final : public cache::v1::CacheService::Service {};
EOF

# Splits the blocks into snippet_<n>.cc, each with #line directives that map
# it back to the Markdown file; prints "<file>:<line>" per snippet.
extract() {
  local md="$1" out_prefix="$2"
  awk -v md="$md" -v out="$out_prefix" '
    function flush(   f, i, has_main) {
      f = out "_" n ".cc"
      has_main = 0
      for (i = 1; i <= count; i++) if (body[i] ~ /(^|[^A-Za-z0-9_])main[ \t]*\(/) has_main = 1
      printf "#include \"readme_prelude.h\"\n" > f
      if (!has_main) {
        for (i = 1; i <= count; i++) {
          if (body[i] ~ /^[ \t]*#[ \t]*include/) {
            printf "#line %d \"%s\"\n%s\n", start + i, md, body[i] > f
            body[i] = ""
          }
        }
        printf "#line %d \"%s\"\n[[maybe_unused]] static int ReadmeSnippet() {\n", start, md > f
      } else {
        printf "#line %d \"%s\"\n\n", start, md > f
      }
      for (i = 1; i <= count; i++) {
        line = body[i]
        if (line ~ /^[ \t]*\.\.\.[ \t]*(\/\/.*)?$/) line = ""
        print line > f
      }
      if (!has_main) print "  return 0;\n}" > f
      close(f)
      print md ":" start
    }
    /^```cpp[ \t]*$/ && !inside { inside = 1; n++; start = NR; count = 0; next }
    /^```[ \t]*$/ && inside { inside = 0; flush(); next }
    inside { body[++count] = $0 }
  ' "$md"
}

# shellcheck disable=SC2207  # pkg-config's output is a list of flags
cxxflags=(-std=c++17 -fsyntax-only -Wall -Wextra -Wno-unused -Werror
  -I "$prefix/include" -I "$work" $(pkg-config --cflags grpc++ protobuf))
total=0
failed=0
for md in "${files[@]}"; do
  md="$(cd "$(dirname "$md")" && pwd)/$(basename "$md")"
  base="$work/$(basename "$md" .md)"
  n=0
  while IFS= read -r where; do
    n=$((n + 1))
    total=$((total + 1))
    if g++ "${cxxflags[@]}" -c "${base}_$n.cc" 2> "$work/errors"; then
      printf 'ok   %s\n' "${where#"$REPO_ROOT"/}"
    else
      printf 'FAIL %s\n' "${where#"$REPO_ROOT"/}"
      sed "s|$REPO_ROOT/||g" "$work/errors"
      failed=$((failed + 1))
    fi
  done < <(extract "$md" "$base")
done

if [ "$total" -eq 0 ]; then
  log "no \`\`\`cpp blocks in ${files[*]}"
elif [ "$failed" -eq 0 ]; then
  log "README snippets: all $total compile"
else
  log "README snippets: $failed of $total do not compile"
  exit 1
fi
