#!/usr/bin/env python3
"""Checks every relative link of README.md, CHANGELOG.md and docs/**/*.md.

    scripts/check_links.py [REPO_ROOT]

A link [text](target) or ![alt](target) whose target is not a URL must name a
file or folder of the repository, relative to the Markdown file; a
"#anchor", alone or after a Markdown file's path, must be the anchor of one of
that file's headings, as GitHub makes them: lower case, punctuation other
than '-' and '_' dropped, spaces turned into '-', and "-1", "-2"... after a
repeated one. Links and headings inside code (fenced blocks, `spans`) are not
links. Prints one line per broken link, naming the file, the line and the
target; exits 1 if there is any.
"""

import os
import re
import sys
import urllib.parse

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def without_code_spans(line):
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        seen = {}
        with open(path, encoding="utf-8") as f:
            for _, line in prose_lines(f.read()):
                m = HEADING.match(line)
                if not m:
                    continue
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def markdown_files(root):
    for name in ("README.md", "CHANGELOG.md"):
        if os.path.exists(os.path.join(root, name)):
            yield os.path.join(root, name)
    for folder, _, names in sorted(os.walk(os.path.join(root, "docs"))):
        for name in sorted(names):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def check(root):
    broken = []
    count = 0
    for md in markdown_files(root):
        with open(md, encoding="utf-8") as f:
            text = f.read()
        for number, line in prose_lines(text):
            for m in LINK.finditer(without_code_spans(line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # https:, mailto:, ...
                count += 1
                path, _, anchor = target.partition("#")
                path = urllib.parse.unquote(path)
                where = os.path.relpath(md, root)
                if path.startswith("/"):
                    broken.append(f"{where}:{number}: {target}: an absolute path")
                    continue
                resolved = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
                if os.path.relpath(resolved, root).split(os.sep)[0] == "..":
                    broken.append(f"{where}:{number}: {target}: outside the repository")
                elif not os.path.exists(resolved):
                    broken.append(f"{where}:{number}: {target}: no such file")
                elif anchor and resolved.endswith(".md"):
                    if urllib.parse.unquote(anchor) not in anchors(resolved):
                        broken.append(f"{where}:{number}: {target}: no heading with the anchor "
                                      f"#{anchor} in {os.path.relpath(resolved, root)}")
    return count, broken


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    count, broken = check(root)
    for line in broken:
        print(line)
    if broken:
        print(f"{len(broken)} of {count} relative links are broken")
        return 1
    print(f"all {count} relative links lead somewhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
