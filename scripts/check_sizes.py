#!/usr/bin/env python3
"""Checks the size limits the project keeps to, so that no file, function or
class grows past what a reader can hold (docs/development.md, "Size limits").

    scripts/check_sizes.py [REPO_ROOT]          exits 1, naming each violation
    scripts/check_sizes.py --list FILE...       prints every function and class
                                                the detector finds (debugging)

Fails, naming the file, the line and the count, when:
  - a file of src/ or include/ has more than 400 lines (as `wc -l` counts
    them, plus a last line without a newline);
  - a function of src/policy/ or src/server_interceptors/ has more than 60
    lines, counted from the first line of its declaration (the template<...>
    and return type lines included) to the line of its closing brace, both
    included. Lambdas, local classes and nested blocks inside a function are
    part of that function. A lambda outside any function (a namespace-scope
    or member variable initialised with one, or one in a table of them) is a
    function of its own, named after the variable;
  - a class, struct or union of src/ or include/ declares more than 25 public
    member functions. Counted: every declaration of a member function in a
    public section of the class body (a struct's and a union's first section
    is public, a class's private): each overload, constructors, operators
    and static member functions included, whether defined in the body or
    only declared there; a reader of the class has each of them to learn.
    Not counted: the destructor (nobody calls it by name), declarations
    "= delete" (they remove a function), friends, using-declarations, macros
    (a name of three or more CAPITALS, digits and underscores followed by
    "(") and the members of nested classes, counted for the nested class.

The C++ is read by a small brace-matching scanner, not a compiler: comments,
string and character literals (raw strings included) and preprocessor lines
are blanked first; each "{" is then classified by what precedes it since the
last ";", "{" or "}" (namespace, class, enum, initialiser, function body,
lambda). Both branches of an #if are read; a file whose braces do not balance
is reported as unreadable rather than measured wrongly. There is no
allow-list: a file over a limit is split, not excused.
"""

import os
import re
import sys

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PUBLIC_METHODS = 25

FILE_DIRS = ("src", "include")
FUNCTION_DIRS = ("src/policy", "src/server_interceptors")
CLASS_DIRS = ("src", "include")
CPP_SUFFIXES = (".h", ".cc")

KEYWORDS_BEFORE_PARENS = {
    "decltype", "alignas", "noexcept", "__attribute__", "sizeof", "alignof",
    "static_assert", "requires", "throw",
}
# Words before a "(" that make it no function name (a function pointer
# "void (*f)()", a statement).
NOT_NAMES = {
    "void", "int", "char", "bool", "short", "long", "float", "double",
    "unsigned", "signed", "auto", "const", "volatile", "return", "if", "for",
    "while", "switch", "catch",
}
IDENT = re.compile(r"^[A-Za-z_]\w*$")
MACRO = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
TOKEN = re.compile(
    r'""|[A-Za-z_]\w*|\d[\w.\']*|::|->|\.\.\.|[^\s\w]', re.S)


# ---------------------------------------------------------------------------
# Blanking: comments, literals and preprocessor lines become spaces; newlines
# stay, so line numbers stay.

def blank(text):
    out = []
    i, n = 0, len(text)
    at_line_start = True  # only whitespace since the last newline
    directive = False     # in a preprocessor line (continuations included)
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            directive = directive and i > 0 and text[i - 1] == "\\"
            i += 1
            at_line_start = True
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(" " + _newlines(text[i:end]))
            i = end
            continue
        if at_line_start and c == "#":
            directive = True
        if not c.isspace():
            at_line_start = False
        if directive:
            i += 1
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(', text[i:i + 24])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + _newlines(text[i:end]))
            i = end
            continue
        if c == '"':
            out.append('""')
            i = _past_quoted(text, i, '"')
            continue
        if c == "'":
            # A digit separator (1'000, 0xFF'FF) or a character literal.
            k = len(out) - 1
            while k >= 0 and (out[k].isalnum() or out[k] in "_'"):
                k -= 1
            word = "".join(out[k + 1:])
            if word[:1].isdigit():
                i += 1
                continue
            out.append("0")
            i = _past_quoted(text, i, "'")
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _past_quoted(text, i, quote):
    """The index just past the literal opened by `quote` at `i` (a string or
    a character literal; escapes skipped; an unclosed one ends at its line)."""
    j = i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _newlines(s):
    return "\n" * s.count("\n")


def tokenize(text):
    """[(token, line)] of the blanked text."""
    tokens = []
    line = 1
    pos = 0
    for m in TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        tokens.append((m.group(0), line))
    return tokens


# ---------------------------------------------------------------------------
# What a declaration's head (the tokens before its ";" or "{") is.

def strip_template_prefix(head):
    """The head without its leading template<...> clauses and attributes."""
    i = 0
    while i < len(head):
        tok = head[i][0]
        if tok == "template" and i + 1 < len(head) and head[i + 1][0] == "<":
            depth, paren = 0, 0
            j = i + 1
            while j < len(head):
                t = head[j][0]
                if t == "(":
                    paren += 1
                elif t == ")":
                    paren -= 1
                elif paren == 0 and t == "<":
                    depth += 1
                elif paren == 0 and t == ">":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            i = j + 1
        elif tok == "[" and i + 1 < len(head) and head[i + 1][0] == "[":
            j = i + 2
            while j + 1 < len(head) and not (head[j][0] == "]" and head[j + 1][0] == "]"):
                j += 1
            i = j + 2
        else:
            break
    return head[i:]


def matching(head, i, open_tok, close_tok):
    """Index of the token closing the one at i (an open_tok)."""
    depth = 0
    for j in range(i, len(head)):
        if head[j][0] == open_tok:
            depth += 1
        elif head[j][0] == close_tok:
            depth -= 1
            if depth == 0:
                return j
    return len(head) - 1


def function_name(head):
    """(name, index of its parameter list's "(") of a head that declares a
    function, or None. Skips decltype(...), attributes and template
    arguments before the name; None when an "=" comes first (a variable)."""
    angle = 0
    i = 0
    while i < len(head):
        tok = head[i][0]
        if tok == "operator":
            j = i + 1
            if j + 1 < len(head) and head[j][0] == "(" and head[j + 1][0] == ")":
                j += 2
            while j < len(head) and head[j][0] != "(":
                j += 1
            if j >= len(head):
                return None
            name = "operator" + "".join(t for t, _ in head[i + 1:j])
            if name[len("operator"):len("operator") + 1].isalpha():
                name = "operator " + name[len("operator"):]
            return qualify(head, i, name), j
        if tok == "[" and i + 1 < len(head) and head[i + 1][0] == "[":
            i = matching(head, i, "[", "]") + 1
            continue
        if tok == "(":
            prev = head[i - 1][0] if i > 0 else ""
            if prev in KEYWORDS_BEFORE_PARENS:
                i = matching(head, i, "(", ")") + 1
                continue
            if angle > 0:
                i = matching(head, i, "(", ")") + 1
                continue
            if not IDENT.match(prev) or prev in NOT_NAMES:
                return None
            return qualify(head, i - 1, prev), i
        if tok == "<":
            angle += 1
        elif tok == ">" and angle > 0:
            angle -= 1
        elif tok == "=" and angle == 0:
            return None
        i += 1
    return None


def qualify(head, i, name):
    """name preceded by its A::B:: qualifiers (and "~") in the head."""
    j = i - 1
    if not name.startswith("operator") and j >= 0 and head[j][0] == "~":
        name = "~" + name
        j -= 1
    while j >= 1 and head[j][0] == "::" and IDENT.match(head[j - 1][0]):
        name = head[j - 1][0] + "::" + name
        j -= 2
    return name


def ends_deleted(head, start):
    """True when the head ends in "= delete"."""
    toks = [t for t, _ in head[start:]]
    return len(toks) >= 2 and toks[-2] == "=" and toks[-1] == "delete"


def is_lambda_body(head):
    """The index of the lambda's "[" when the "{" after head opens a lambda's
    body ([captures] {, [captures](params) mutable -> T {), else None."""
    toks = [t for t, _ in head]
    j = len(toks) - 1
    last_paren = max((k for k, t in enumerate(toks) if t == ")"), default=-1)
    arrows = [k for k, t in enumerate(toks) if t == "->" and k > last_paren]
    if arrows and last_paren >= 0:
        j = arrows[0] - 1  # [](int x) -> std::string {
    while j >= 0 and toks[j] in ("mutable", "noexcept", "constexpr"):
        j -= 1
    if j >= 0 and toks[j] == ")":
        j = opening(toks, j, "(", ")") - 1
    if j < 0 or toks[j] != "]":
        return None
    k = opening(toks, j, "[", "]")
    if k < 0:
        return None
    before = toks[k - 1] if k > 0 else ""
    # a[i] { and [[attribute]] are not lambdas.
    if (IDENT.match(before) and before != "return") or before in (")", "]", "["):
        return None
    if k + 1 < len(toks) and toks[k + 1] == "[":
        return None
    return k


def opening(toks, j, open_tok, close_tok):
    """Index of the token opening the one at j (a close_tok), or -1."""
    depth = 0
    for k in range(j, -1, -1):
        if toks[k] == close_tok:
            depth += 1
        elif toks[k] == open_tok:
            depth -= 1
            if depth == 0:
                return k
    return -1


def variable_name(head):
    """The name declared by a head: its last identifier outside template
    arguments before the first "=", "(" or "{" there."""
    name = None
    angle = 0
    for tok, _ in head:
        if tok == "<":
            angle += 1
        elif tok == ">" and angle > 0:
            angle -= 1
        elif angle == 0 and tok in ("=", "(", "{"):
            break
        elif angle == 0 and IDENT.match(tok):
            name = tok
    return name or "(anonymous)"


def paren_depth(head):
    depth = 0
    for tok, _ in head:
        if tok in ("(", "["):
            depth += 1
        elif tok in (")", "]"):
            depth -= 1
    return depth


def in_init_list(head):
    """True when the head is a constructor's parameters and a ":" after them."""
    depth = 0
    closed = False
    for tok, _ in head:
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
            if depth == 0:
                closed = True
        elif tok == ":" and depth == 0 and closed:
            return True
    return False


# ---------------------------------------------------------------------------
# The scanner.

class Function:
    def __init__(self, name, first, last):
        self.name, self.first, self.last = name, first, last

    @property
    def lines(self):
        return self.last - self.first + 1


class Class:
    def __init__(self, name, line, public):
        self.name, self.line = name, line
        self.public = public        # the current section's access
        self.methods = []           # public member functions: (name, line)


class Unreadable(Exception):
    pass


def scan(text):
    """(functions, classes) of a C++ source text."""
    tokens = tokenize(blank(text))
    functions, classes = [], []
    # Each scope: [kind, data]; kinds: ns, class (data: Class), func
    # (data: [name, first line, brace depth]), skip (data: depth; enum
    # bodies and initialisers), init (an initialiser that may hold lambdas:
    # data: [variable, depth]), head (braces inside a head: data: depth).
    scopes = [["ns", None]]
    head = []

    def finish_declaration(head):
        top = scopes[-1]
        if top[0] != "class" or not top[1].public:
            return
        decl = strip_template_prefix(head)
        if not decl:
            return
        first = decl[0][0]
        if first in ("friend", "using", "typedef", "static_assert", "enum",
                     "class", "struct", "union", "template"):
            return
        found = function_name(decl)
        if not found:
            return
        name, paren = found
        base = name.split("::")[-1]
        if base.startswith("~") or MACRO.match(base):
            return
        # A CAPITALS annotation after a variable: int x_ ABSL_GUARDED_BY(mu_);
        if ends_deleted(decl, paren):
            return
        top[1].methods.append((name, decl[0][1]))

    for tok, line in tokens:
        kind, data = scopes[-1]
        if kind == "func":
            if tok == "{":
                data[2] += 1
            elif tok == "}":
                data[2] -= 1
                if data[2] == 0:
                    functions.append(Function(data[0], data[1], line))
                    scopes.pop()
            continue
        if kind in ("skip", "head"):
            # Braces counted to their match; a head's are part of the head.
            if kind == "head":
                head.append((tok, line))
            if tok == "{":
                scopes[-1][1] += 1
            elif tok == "}":
                scopes[-1][1] -= 1
                if scopes[-1][1] == 0:
                    scopes.pop()
            continue
        if kind == "init":
            # Inside an initialiser outside any function: braces nest; a
            # lambda's body is a function of its own.
            if tok == "{":
                start = is_lambda_body(head)
                if start is not None:
                    scopes.append(["func", [data[0] + " (lambda)", head[start][1], 1]])
                else:
                    data[1] += 1
                head.append((tok, line))
            elif tok == "}":
                data[1] -= 1
                if data[1] == 0:
                    scopes.pop()
                    head = []
                else:
                    head.append((tok, line))
            else:
                head.append((tok, line))
            continue
        # Namespace or class scope.
        if tok == ";":
            finish_declaration(head)
            head = []
            continue
        if tok == ":" and kind == "class" and len(head) == 1 and \
                head[0][0] in ("public", "private", "protected"):
            data.public = head[0][0] == "public"
            head = []
            continue
        if tok == "}":
            scopes.pop()
            if not scopes:
                raise Unreadable(f"line {line}: a '}}' closes more than was opened")
            head = []
            continue
        if tok != "{":
            head.append((tok, line))
            continue
        # tok == "{": what does it open?
        decl = strip_template_prefix(head)
        first = decl[0][0] if decl else ""
        if first in ("namespace", "inline") and "namespace" in [t for t, _ in decl[:2]]:
            scopes.append(["ns", None])
            head = []
        elif first == "extern" and "(" not in [t for t, _ in decl]:
            scopes.append(["ns", None])
            head = []
        elif first == "enum" or (first == "typedef" and len(decl) > 1 and decl[1][0] == "enum"):
            scopes.append(["skip", 1])
            head = []
        elif first in ("class", "struct", "union") or (
                first == "typedef" and len(decl) > 1 and decl[1][0] in ("struct", "union")):
            # The name: the last identifier before the bases (":") or the
            # template arguments of a specialisation ("<"), not a macro.
            cut = [t for t, _ in decl]
            upto = min([cut.index(t) for t in (":", "<") if t in cut] + [len(cut)])
            idents = [t for t in cut[1:upto] if IDENT.match(t)
                      and t not in ("final", "alignas", "struct", "union") and not MACRO.match(t)]
            name = idents[-1] if idents else "(anonymous)"
            cls = Class(name, decl[0][1], public=first != "class")
            classes.append(cls)
            scopes.append(["class", cls])
            head = []
        elif is_lambda_body(head) is not None and function_name(decl) is None:
            # A lambda outside any function: a variable's initialiser, or an
            # argument in one (Register([] { ... })). The head stays, for the
            # rest of the statement.
            start = is_lambda_body(head)
            scopes.append(["func", [variable_name(decl) + " (lambda)", head[start][1], 1]])
        elif paren_depth(head) > 0 or (in_init_list(head) and head and (
                IDENT.match(head[-1][0]) or head[-1][0] == ">")):
            # A brace inside the parameters (a default argument, a lambda
            # there included) or a member's brace initialiser in a
            # constructor's init list: part of the head.
            head.append((tok, line))
            scopes.append(["head", 1])
        else:
            found = function_name(decl)
            name = found[0] if found else None
            if name and MACRO.match(name.split("::")[-1]) and found[1] > 1:
                name = None  # int x_ ABSL_GUARDED_BY(mu_){0};
            if name is None:
                scopes.append(["init", [variable_name(decl), 1]])
                head = [(tok, line)]
                continue
            finish_declaration(head)
            scopes.append(["func", [name, head[0][1], 1]])
            head = []
    if len(scopes) != 1:
        raise Unreadable("the braces do not balance (an #if with a '{' in one branch?)")
    return functions, classes


# ---------------------------------------------------------------------------

def count_lines(text):
    return len(text.splitlines())


def source_files(root, dirs, suffixes=None):
    for top in dirs:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if suffixes is None or name.endswith(suffixes):
                    path = os.path.join(dirpath, name)
                    yield os.path.relpath(path, root)


def under(path, dirs):
    return any(path == d or path.startswith(d + "/") for d in dirs)


def check(root):
    """The violations under root, one message each."""
    problems = []
    for path in source_files(root, FILE_DIRS):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = count_lines(text)
        if lines > MAX_FILE_LINES:
            problems.append(f"{path}: {lines} lines (limit {MAX_FILE_LINES})")
        if not path.endswith(CPP_SUFFIXES):
            continue
        check_functions = under(path, FUNCTION_DIRS)
        check_classes = under(path, CLASS_DIRS)
        if not (check_functions or check_classes):
            continue
        try:
            functions, classes = scan(text)
        except Unreadable as e:
            problems.append(f"{path}: cannot be measured: {e}")
            continue
        if check_functions:
            for fn in functions:
                if fn.lines > MAX_FUNCTION_LINES:
                    problems.append(f"{path}:{fn.first}: function {fn.name} has {fn.lines} lines "
                                    f"(limit {MAX_FUNCTION_LINES})")
        if check_classes:
            for cls in classes:
                if len(cls.methods) > MAX_PUBLIC_METHODS:
                    problems.append(f"{path}:{cls.line}: class {cls.name} has {len(cls.methods)} "
                                    f"public methods (limit {MAX_PUBLIC_METHODS})")
    return problems


def list_file(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        functions, classes = scan(f.read())
    for fn in functions:
        print(f"{path}:{fn.first}-{fn.last}: function {fn.name}: {fn.lines} lines")
    for cls in classes:
        print(f"{path}:{cls.line}: class {cls.name}: {len(cls.methods)} public methods")
        for name, line in cls.methods:
            print(f"    {line}: {name}")


def main(argv):
    if argv[1:2] == ["--list"]:
        for path in argv[2:]:
            list_file(path)
        return 0
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_sizes: {len(problems)} over the limits (files {MAX_FILE_LINES} lines, "
              f"functions {MAX_FUNCTION_LINES} lines in {', '.join(FUNCTION_DIRS)}, "
              f"classes {MAX_PUBLIC_METHODS} public methods)", file=sys.stderr)
        return 1
    print("check_sizes: every file, function and class within the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
