#!/usr/bin/env bash
# Checks that the layering docs/architecture.md states is the one the build
# declares and the code has. The document's ```layering block lists, per
# folder of src/, its layer and the folders it may depend on; its
# ```public-headers block, per public header, the folders that implement it.
# Fails, naming the file and the edge, when:
#   - a folder depends on one in its own or a higher layer (the order);
#   - src/<dir>/CMakeLists.txt declares a library in DEPS or PRIVATE_DEPS
#     that the document does not allow (the build);
#   - a file of src/<dir> includes "src/<other>/..." that the document does
#     not allow, or that its declared dependencies do not reach (the code);
#   - a file of src/<dir> includes a public header "grpc_resilience/x.h"
#     whose implementing folder it may not depend on;
#   - a public header includes an internal one ("src/..."), directly or
#     through another public header;
#   - a file of examples/ includes an internal header ("src/...");
#   - the document allows an edge that neither the build nor the code uses,
#     or lists a folder that does not exist, or misses one (the document).
#
#   scripts/check_layering.sh          exits 0 and prints a summary when all agree
#
# Needs python3 only (no build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 - "$@" <<'PYEOF'
import os
import re
import sys

DOC = "docs/architecture.md"
errors = []


def fail(where, message):
    errors.append(f"{where}: {message}")


def fenced_block(text, info):
    m = re.search(r"^```" + info + r"\n(.*?)^```", text, re.S | re.M)
    if not m:
        sys.exit(f"{DOC}: no ```{info} block")
    return [l.strip() for l in m.group(1).splitlines()
            if l.strip() and not l.strip().startswith("#")]


doc = open(DOC).read()
# "client_interceptors (5): core breaker ..."
layer, allowed = {}, {}
for line in fenced_block(doc, "layering"):
    m = re.fullmatch(r"([a-z_]+) \((\d+)\):(.*)", line)
    if not m:
        sys.exit(f"{DOC}: layering line not '<folder> (<layer>): <folders>': {line!r}")
    layer[m.group(1)] = int(m.group(2))
    allowed[m.group(1)] = set(m.group(3).split())
# "client.h: client_interceptors"
implementers = {}
for line in fenced_block(doc, "public-headers"):
    name, _, folders = line.partition(":")
    implementers[name.strip()] = set(folders.split())

folders = sorted(d for d in os.listdir("src") if os.path.isfile(f"src/{d}/CMakeLists.txt"))
for d in folders:
    if d not in layer:
        fail(DOC, f"src/{d} is not in the layering block")
for d in layer:
    if d not in folders:
        fail(DOC, f"the layering block lists src/{d}, which does not exist")
for d, deps in allowed.items():
    for dep in deps:
        if dep not in layer:
            fail(DOC, f"{d} -> {dep}: no such folder in the layering block")
        elif layer[dep] >= layer[d]:
            fail(DOC, f"{d} (layer {layer[d]}) -> {dep} (layer {layer[dep]}): "
                      "points to its own or a higher layer")

# The build: target names (grpc_resilience_library(NAME x)) and DEPS.
target_folder, declared = {}, {}
for d in folders:
    text = open(f"src/{d}/CMakeLists.txt").read()
    for m in re.finditer(r"grpc_resilience_library\(NAME (\w+)", text):
        target_folder[f"grpc_resilience_{m.group(1)}"] = d
for d in folders:
    path = f"src/{d}/CMakeLists.txt"
    text = open(path).read()
    declared[d] = set()
    for m in re.finditer(r"grpc_resilience_library\((.*?)\)\s*$", text, re.S | re.M):
        for dep in re.findall(r"\b(grpc_resilience_\w+)\b", m.group(1)):
            if dep in target_folder and target_folder[dep] != d:
                declared[d].add(target_folder[dep])
    for dep in sorted(declared[d]):
        if dep not in allowed.get(d, set()):
            fail(path, f"declares {d} -> {dep}, which {DOC} does not allow")


def closure(d, seen=None):
    seen = set() if seen is None else seen
    for dep in declared.get(d, ()):
        if dep not in seen:
            seen.add(dep)
            closure(dep, seen)
    return seen


include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
used = {d: set() for d in folders}
for d in folders:
    reach = closure(d)
    for name in sorted(os.listdir(f"src/{d}")):
        if not name.endswith((".h", ".cc")):
            continue
        path = f"src/{d}/{name}"
        for inc in include_re.findall(open(path).read()):
            m = re.match(r"src/([a-z_]+)/", inc)
            if m:
                other = m.group(1)
                if other == d:
                    continue
                used[d].add(other)
                if other not in allowed.get(d, set()):
                    fail(path, f'includes "{inc}": {d} -> {other}, which {DOC} does not allow')
                elif other not in reach:
                    fail(path, f'includes "{inc}": {d} -> {other}, which '
                               f"src/{d}/CMakeLists.txt does not declare (DEPS)")
                continue
            m = re.match(r"grpc_resilience/(\w+\.h)$", inc)
            if m:
                header = m.group(1)
                if header not in implementers:
                    fail(path, f'includes "{inc}", which the public-headers block does not list')
                    continue
                for impl in implementers[header] - {d}:
                    used[d].add(impl)
                    if impl not in allowed.get(d, set()):
                        fail(path, f'includes "{inc}" (implemented in src/{impl}): '
                                   f"{d} -> {impl}, which {DOC} does not allow")

for d in folders:
    for dep in sorted(allowed.get(d, set()) - used[d] - declared[d]):
        fail(DOC, f"allows {d} -> {dep}, which neither src/{d}/CMakeLists.txt "
                  f"nor any include of src/{d} uses")

# Public headers: nothing internal, directly or through one another.
# PENDING: headers reported, not failed, while they are being made clean;
# empty: every public header is held to the rule.
PENDING = set()
pending_notes = []
public = sorted(n for n in os.listdir("include/grpc_resilience") if n.endswith(".h"))
for name in public:
    if name not in implementers:
        fail(DOC, f"include/grpc_resilience/{name} is not in the public-headers block")
for name in implementers:
    if name not in public:
        fail(DOC, f"the public-headers block lists {name}, which does not exist")


def internal_includes(name, chain, seen):
    path = f"include/grpc_resilience/{name}"
    if name in seen or not os.path.exists(path):
        return
    seen.add(name)
    for inc in include_re.findall(open(path).read()):
        if inc.startswith("src/"):
            top = chain[0] if chain else name
            if top in PENDING:
                pending_notes.append(f"include/grpc_resilience/{top}: {inc} (pending)")
                continue
            via = " -> ".join(chain + [name])
            fail(f"include/grpc_resilience/{chain[0] if chain else name}",
                 f'includes the internal header "{inc}"' + (f" (via {via})" if chain else ""))
        m = re.match(r"grpc_resilience/(\w+\.h)$", inc)
        if m:
            internal_includes(m.group(1), chain + [name], seen)


for name in public:
    internal_includes(name, [], set())

# The examples are written as a user's program is: public headers only
# (scripts/examples_consumer.sh builds them against an install).
for root, _, files in os.walk("examples"):
    for f in sorted(files):
        if not f.endswith((".h", ".cc", ".h.in")):
            continue
        path = os.path.join(root, f)
        for n, line in enumerate(open(path), 1):
            m = re.match(r'\s*#\s*include\s+"(src/[^"]+)"', line)
            if m:
                fail(f"{path}:{n}", f'includes the internal header "{m.group(1)}" '
                                    "(an example includes grpc_resilience/<name>.h only)")

if errors:
    print("\n".join(errors), file=sys.stderr)
    print(f"layering: {len(errors)} disagreement(s) between {DOC}, the build and the code",
          file=sys.stderr)
    sys.exit(1)
if pending_notes:
    print(f"layering: {len(pending_notes)} internal include(s) of public headers still pending: "
          + ", ".join(sorted({n.split(':')[0] for n in pending_notes})))
edges = sum(len(a) for a in allowed.values())
print(f"layering: {len(folders)} folders, {edges} allowed edges, {len(public)} public headers: "
      f"{DOC}, src/*/CMakeLists.txt and the includes agree")
PYEOF
