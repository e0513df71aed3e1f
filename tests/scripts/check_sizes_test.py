#!/usr/bin/env python3
"""Tests of scripts/check_sizes.py: its C++ function and class detector on the
fixtures in check_sizes_fixtures/, and the checker failing, naming file and
count, on a repository one line, one function line or one method over a limit.

    python3 tests/scripts/check_sizes_test.py     (ctest: check_sizes_test)
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "scripts", "check_sizes.py")
FIXTURES = os.path.join(HERE, "check_sizes_fixtures")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import check_sizes  # noqa: E402


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


def function_of(lines, name="Fn"):
    """A function of exactly `lines` lines (lines >= 5), a lambda inside."""
    body = ["  auto twice = [](int v) {", "    return 2 * v;", "  };"]
    while len(body) < lines - 2:
        body.append("  x = twice(x);")
    return "\n".join([f"int {name}(int x) {{"] + body + ["}"]) + "\n"


def class_with(public_methods):
    methods = [f"  void Method{i}();" for i in range(public_methods)]
    return "\n".join(["class Big {", " public:", "  ~Big();"] + methods +
                     [" private:", "  void Hidden();", "};"]) + "\n"


class DetectorTest(unittest.TestCase):
    def test_function_shapes(self):
        functions, _ = check_sizes.scan(fixture("shapes.cc"))
        found = [(f.name, f.first, f.last) for f in functions]
        self.assertEqual(found, [
            ("Plain", 13, 15),
            # template<> line to the closing brace; its lambdas, its local
            # class's method and the braces in literals are part of it.
            ("Templated", 19, 32),
            ("Widget", 36, 38),            # a brace-initialised member in the init list
            ("operator()", 39, 39),
            ("operator==", 40, 42),
            ("callback_ (lambda)", 47, 49),  # a member initialised with a lambda
            ("kTable (lambda)", 53, 53),     # lambdas in a table, each on its own
            ("kTable (lambda)", 54, 56),
            ("kRegistered (lambda)", 59, 61),
            ("Widget::Raw", 63, 68),         # a raw string with braces
            ("Trailing", 70, 70),
            ("CFunction", 73, 73),           # inside extern "C" { }
        ])

    def test_public_methods(self):
        _, classes = check_sizes.scan(fixture("methods.h"))
        counts = {c.name: len(c.methods) for c in classes}
        self.assertEqual(counts, {"Counted": 12, "Nested": 1, "PublicByDefault": 2})
        counted = [name for name, _ in classes[0].methods]
        self.assertEqual(counted, [
            "Counted", "Counted", "operator=", "Make", "Overloaded", "Overloaded",
            "inline_body", "Templated", "Pure", "operator bool", "Annotated", "AgainPublic"])

    def test_too_long_fixture(self):
        functions, _ = check_sizes.scan(fixture("too_long.cc"))
        self.assertEqual([(f.name, f.lines) for f in functions], [("TooLong", 61)])

    def test_exact_lengths(self):
        for lines in (5, 60, 61):
            functions, _ = check_sizes.scan(function_of(lines))
            self.assertEqual([f.lines for f in functions], [lines])

    def test_unbalanced_braces_are_reported(self):
        with self.assertRaises(check_sizes.Unreadable):
            check_sizes.scan("void f() {\n#if A\n  if (x) {\n#else\n  if (y) {\n#endif\n  }\n}\n")


class CheckerTest(unittest.TestCase):
    """The script run on a small repository of its own."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="check_sizes_test.")
        self.addCleanup(shutil.rmtree, self.root)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def run_checker(self):
        result = subprocess.run([sys.executable, SCRIPT, self.root], capture_output=True,
                                text=True, check=False)
        return result.returncode, result.stdout

    def test_within_limits_passes(self):
        self.write("src/policy/ok.cc", function_of(60))
        self.write("src/server_interceptors/ok.h", class_with(25))
        self.write("include/grpc_resilience/ok.h", "\n" * 400)
        # Functions are measured in src/policy and src/server_interceptors only.
        self.write("src/routing/long.cc", function_of(100))
        code, out = self.run_checker()
        self.assertEqual(code, 0, out)

    def test_too_long_function_fixture_fails(self):
        self.write("src/policy/too_long.cc", fixture("too_long.cc"))
        code, out = self.run_checker()
        self.assertEqual(code, 1)
        self.assertIn("src/policy/too_long.cc:5: function TooLong has 61 lines (limit 60)", out)

    def test_too_long_function_in_server_interceptors_fails(self):
        self.write("src/server_interceptors/x.cc", "namespace a {\n" + function_of(61, "Big") + "}\n")
        code, out = self.run_checker()
        self.assertEqual(code, 1)
        self.assertIn("src/server_interceptors/x.cc:2: function Big has 61 lines", out)

    def test_too_long_file_fails(self):
        self.write("include/grpc_resilience/big.h", "//\n" * 401)
        self.write("src/core/big.cc", "//\n" * 400 + "// no newline at the end")
        code, out = self.run_checker()
        self.assertEqual(code, 1)
        self.assertIn("include/grpc_resilience/big.h: 401 lines (limit 400)", out)
        self.assertIn("src/core/big.cc: 401 lines (limit 400)", out)

    def test_too_many_public_methods_fails(self):
        self.write("src/core/big.h", class_with(26))
        code, out = self.run_checker()
        self.assertEqual(code, 1)
        self.assertIn("src/core/big.h:1: class Big has 26 public methods (limit 25)", out)

    def test_unreadable_file_fails(self):
        self.write("src/core/odd.cc", "void f() {\n")
        code, out = self.run_checker()
        self.assertEqual(code, 1)
        self.assertIn("src/core/odd.cc: cannot be measured", out)


if __name__ == "__main__":
    unittest.main()
