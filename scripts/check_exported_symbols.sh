#!/usr/bin/env bash
# Checks that the shared libraries export the public API only: every dynamic
# symbol they define (nm -D --defined-only, demangled) is declared in
# include/grpc_resilience, so that nothing of src/ leaks into the ABI.
#
#   scripts/check_exported_symbols.sh LIBRARY.so...
#   scripts/check_exported_symbols.sh BUILD_DIR     its libgrpc_resilience*.so
#
# A symbol of namespace resilience passes when its outermost name (after
# `resilience::`: a class, struct or function) is marked GRPC_RESILIENCE_EXPORT
# in a public header, and every further name of it (a nested class, a member,
# `~X`, an operator) is a name those headers' code uses (comments not
# counted). vtables, typeinfo and thunks are checked as the class they are
# for. Any other symbol must be a weak template instantiation (libstdc++'s
# or Abseil's, over public types: every `resilience::` type it names is
# public); a strong symbol outside the namespace, an anonymous namespace or a
# lambda of ours fails. Prints each failing symbol with its nm type and the
# reason; exits 1 on any, 0 (with the counts) otherwise. Run by .ci/run
# (scripts/package.sh) and by ctest's "exported_symbols" in a build
# configured with BUILD_SHARED_LIBS=ON.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -eq 0 ]; then
  echo "usage: $0 LIBRARY.so... | BUILD_DIR" >&2
  exit 2
fi
libraries=()
for arg in "$@"; do
  if [ -d "$arg" ]; then
    while IFS= read -r lib; do libraries+=("$lib"); done < <(
      find "$arg" -maxdepth 1 -name 'libgrpc_resilience*.so' | sort)
  else
    libraries+=("$arg")
  fi
done
if [ "${#libraries[@]}" -eq 0 ]; then
  echo "check_exported_symbols: no libgrpc_resilience*.so in $*" >&2
  exit 1
fi

# The checker (python3): reads `nm -D --defined-only -C` of one library.
read -r -d '' checker <<'PY' || true
import glob, os, re, sys

include_dir, library = sys.argv[1], sys.argv[2]

def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)

exported = set()   # outermost names marked GRPC_RESILIENCE_EXPORT
tokens = set()     # every identifier the public headers' code uses
for path in glob.glob(os.path.join(include_dir, '*.h')):
    code = strip_comments(open(path).read())
    tokens.update(re.findall(r'[A-Za-z_]\w*', code))
    # class GRPC_RESILIENCE_EXPORT Name / struct GRPC_RESILIENCE_EXPORT Name
    exported.update(re.findall(r'\b(?:class|struct)\s+GRPC_RESILIENCE_EXPORT\s+(\w+)', code))
    # GRPC_RESILIENCE_EXPORT <return type> Name(
    for decl in re.findall(r'GRPC_RESILIENCE_EXPORT\s+([^;{]*?)\(', code):
        name = re.findall(r'(\w+)\s*$', decl)
        if name:
            exported.add(name[0])

PREFIXES = ('vtable for ', 'typeinfo for ', 'typeinfo name for ', 'VTT for ',
            'construction vtable for ', 'guard variable for ', 'non-virtual thunk to ',
            'virtual thunk to ', 'covariant return thunk to ', 'TLS init function for ',
            'TLS wrapper function for ', 'reference temporary #0 for ')
LINKER = {'_init', '_fini', '_edata', '_end', '__bss_start'}

def strip_prefixes(name):
    changed = True
    while changed:
        changed = False
        for prefix in PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
                changed = True
    if '-in-' in name:  # construction vtable for A-in-B
        name = name.split('-in-')[0]
    return name

def top_level(name):
    """(index, character) of `name` outside template arguments and
    parentheses, up to the parameter list."""
    depth = 0
    for i, c in enumerate(name):
        if c in '<(':
            if c == '(' and depth == 0:
                return
            depth += 1
        elif c in '>)':
            depth -= 1
        elif depth == 0:
            yield i, c

def entity(name):
    """The qualified name of what the symbol defines: operators named
    `operator`, the return type of a function template's instance left out."""
    name = re.sub(r'\boperator\s*(\(\)|\[\]|<<=?|>>=?|<=>|->\*?|[^\w\s(]+|\s+[\w:<>* ]+?)(?=\()',
                  'operator', name)
    spaces = [i for i, c in top_level(name) if c == ' ']
    return name[spaces[-1] + 1:] if spaces else name

def qualified_components(name):
    """The components of the entity's qualified name: template arguments,
    the parameter list and the ABI tags left out."""
    text = ''.join(c for _, c in top_level(name))
    return [re.sub(r'\[abi:\w+\]', '', p).strip() for p in text.split('::')]

def ours_ok(components):
    outer = components[0]
    if outer not in exported:
        return 'resilience::%s is not marked GRPC_RESILIENCE_EXPORT in include/' % outer
    for part in components[1:]:
        if part == 'operator' or part.startswith('operator'):
            continue
        word = part.lstrip('~')
        if not re.fullmatch(r'[A-Za-z_]\w*', word) or word not in tokens:
            return "'%s' is declared in no public header" % part
    return None

failures, ours, others = [], 0, 0
for line in sys.stdin:
    fields = line.rstrip('\n').split(' ', 2)
    if len(fields) < 3:
        continue
    kind, symbol = fields[1], fields[2]
    if symbol in LINKER or symbol.startswith('GLIBC') or symbol.startswith('GCC_'):
        continue
    name = entity(strip_prefixes(symbol))
    if re.search(r'\(anonymous namespace\)|\{lambda|\{unnamed type', name) and 'resilience::' in name:
        failures.append((kind, symbol, 'an internal (anonymous or lambda) entity of ours'))
        continue
    if name.startswith('resilience::'):
        ours += 1
        reason = ours_ok(qualified_components(name)[1:])
        if reason:
            failures.append((kind, symbol, reason))
        continue
    others += 1
    if kind not in ('W', 'V', 'u', 'w', 'v'):
        failures.append((kind, symbol, 'a strong symbol outside namespace resilience'))
        continue
    for mentioned in re.findall(r'\bresilience::(\w+)', symbol):
        if mentioned not in exported:
            failures.append((kind, symbol, 'an instantiation over resilience::%s, which is '
                             'not marked GRPC_RESILIENCE_EXPORT in include/' % mentioned))
            break

library_name = os.path.basename(library)
if failures:
    print('check_exported_symbols: %s exports %d symbol(s) not declared in include/grpc_resilience:'
          % (library_name, len(failures)))
    for kind, symbol, reason in failures:
        print('  %s %s\n      %s' % (kind, symbol, reason))
    sys.exit(1)
print('check_exported_symbols: %s: %d symbols of the public API, %d weak template '
      'instantiations, nothing else' % (library_name, ours, others))
PY

status=0
for lib in "${libraries[@]}"; do
  if [ ! -f "$lib" ]; then
    echo "check_exported_symbols: $lib: no such file" >&2
    status=1
    continue
  fi
  symbols="$(nm -D --defined-only -C "$lib")" || { status=1; continue; }
  python3 -c "$checker" "$repo/include/grpc_resilience" "$lib" <<<"$symbols" || status=1
done
exit "$status"
