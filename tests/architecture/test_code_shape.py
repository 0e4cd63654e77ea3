"""No product module over 500 lines, no function over 50 (docs/architecture.md, "Shape").

The product is offsets/ and dashboard/, migrations left out (Django writes them). The modules
are read with `ast`, never imported. A function's length runs from its `def` line to its last
line: its decorators do not count, its docstring does.

The limits find smells; they do not shape the code. A function that reads better as one (a
table, a template of steps, a page's flow from top to bottom) may pass through
ALLOWED_LONG_FUNCTIONS, which says why; a helper that exists only to keep a function under 50
lines is folded back instead.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("offsets", "dashboard")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 50

# "path:qualified name" -> why it may be long. Each entry must still name a function over the
# limit, so the list cannot outlive the code.
ALLOWED_LONG_FUNCTIONS: dict[str, str] = {
    "dashboard/pages/edits/views.py:connector_edits": (
        "one page's flow, top to bottom: the live offsets the form edits (or 404, or the "
        "Kafka error's page), the forms they allow, the htmx partial, the POST, the page. Its "
        "first steps were a helper returning `current, (form_class, strategies, store)` only "
        "to keep it under 50 lines."
    ),
}


@dataclass(frozen=True)
class Function:
    path: str  # relative to the repository, with forward slashes
    name: str  # qualified: Class.method, outer.inner
    line: int
    length: int

    @property
    def key(self) -> str:
        return f"{self.path}:{self.name}"


def functions_of(source: str, path: str) -> list[Function]:
    """Every function and method in `source`, nested ones too, with its length in lines."""
    found: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    # lineno is the `def` line: decorators sit above it.
                    length = child.end_lineno - child.lineno + 1
                    found.append(Function(path, name, child.lineno, length))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def product_modules() -> list[Path]:
    return sorted(
        path
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.relative_to(ROOT).parts
    )


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def product_functions() -> list[Function]:
    return [
        function
        for path in product_modules()
        for function in functions_of(path.read_text(encoding="utf-8"), _relative(path))
    ]


def test_no_product_module_is_over_500_lines():
    modules = product_modules()
    assert len(modules) > 100  # the walk found the product
    offences = []
    for path in modules:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            offences.append(f"{_relative(path)}: {lines} lines")
    assert not offences, (
        f"Modules over {MAX_MODULE_LINES} lines (split them, one module one job):\n"
        + "\n".join(offences)
    )


def test_no_product_function_is_over_50_lines():
    offences = [
        f"{function.path}:{function.line} {function.name}: {function.length} lines"
        for function in product_functions()
        if function.length > MAX_FUNCTION_LINES and function.key not in ALLOWED_LONG_FUNCTIONS
    ]
    assert not offences, (
        f"Functions over {MAX_FUNCTION_LINES} lines (decorators left out, docstring counted):\n"
        + "\n".join(offences)
    )


def test_every_allowed_long_function_still_exists_and_is_long():
    lengths = {function.key: function.length for function in product_functions()}
    stale = [key for key in ALLOWED_LONG_FUNCTIONS if lengths.get(key, 0) <= MAX_FUNCTION_LINES]
    assert not stale, "Allowed long functions that are gone or short now:\n" + "\n".join(stale)


def test_it_counts_from_the_def_line_to_the_last_with_the_docstring():
    source = '@decorator\n@another\ndef f():\n    """Doc."""\n    return 1\n'
    assert functions_of(source, "m.py") == [Function("m.py", "f", 3, 3)]


@pytest.mark.parametrize(
    "source,names",
    [
        ("class A:\n    def m(self):\n        pass\n", ["A.m"]),
        ("def outer():\n    def inner():\n        pass\n", ["outer", "outer.inner"]),
        ("async def run():\n    pass\n", ["run"]),
        ("if True:\n    def f():\n        pass\n", ["f"]),
    ],
)
def test_it_finds_methods_nested_and_async_functions(source, names):
    assert [function.name for function in functions_of(source, "m.py")] == names
