"""Code lines of each plugin backend module: lines that are not blank, not only a comment, and not
part of a docstring (a module's, class's or function's first statement when it is a string).

    python benchmarks/code_lines.py                 # every plugins/*/rlplug_*/*_backend.py
    python benchmarks/code_lines.py FILE [FILE...]  # these files
    python benchmarks/code_lines.py --max 60 plugins/ddpg/rlplug_ddpg/*_backend.py  # exit 1 above 60

Issue 28 measures its aim ("each backend module under 60 code lines") with this count.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers every docstring of ``tree`` spans."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(source: str) -> int:
    """How many lines of ``source`` hold code (a token other than a comment, outside any docstring)."""
    skipped = docstring_lines(ast.parse(source))
    code: set[int] = set()
    ignored = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in ignored:
            continue
        code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in skipped)
    return len(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--max", type=int, default=None, help="exit 1 if a file has more code lines than this")
    args = parser.parse_args(argv)
    files = args.files or sorted(ROOT.glob("plugins/*/rlplug_*/*_backend.py"))
    over = False
    for path in files:
        count = code_lines(path.read_text())
        over |= args.max is not None and count > args.max
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        print(f"{count:5d}  {shown}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
