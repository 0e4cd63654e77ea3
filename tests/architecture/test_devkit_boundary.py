"""The product (offsets/, dashboard/) never imports the development kit (devkit/).

The image leaves devkit/ out, so an import of it from the product would break there only. The
modules are read with `ast`, never imported: an import guarded by a condition or done inside
a function counts too.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("offsets", "dashboard")
DEVKIT = "devkit"


def _is_devkit(module: str | None) -> bool:
    return module is not None and (module == DEVKIT or module.startswith(DEVKIT + "."))


def devkit_imports(source: str) -> list[tuple[int, str]]:
    """Return (line, module) for each import of devkit in `source`.

    `import devkit...`, `from devkit... import ...` and `importlib.import_module` or
    `__import__` called with a literal "devkit..." all count.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _is_devkit(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and _is_devkit(node.module):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            first = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and _is_devkit(first.value)
            ):
                found.append((node.lineno, first.value))
    return found


def product_modules() -> list[Path]:
    return sorted(path for package in PRODUCT for path in (ROOT / package).rglob("*.py"))


def test_the_product_never_imports_the_development_kit():
    modules = product_modules()
    assert len(modules) > 100  # the walk found the product
    offences = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in modules
        for line, module in devkit_imports(path.read_text(encoding="utf-8"))
    ]
    assert not offences, "The product imports the development kit:\n" + "\n".join(offences)


@pytest.mark.parametrize(
    "source,line",
    [
        ("import devkit", 1),
        ("import os\nimport devkit.embedded as e", 2),
        ("from devkit import embedded", 1),
        ("from devkit.demo.options import DemoOptions", 1),
        ("def f():\n    if True:\n        from devkit import live_demo", 3),
        ("import importlib\nimportlib.import_module('devkit.embedded')", 2),
        ("__import__('devkit')", 1),
    ],
)
def test_it_finds_an_import_of_devkit_in_any_form(source, line):
    assert [found_line for found_line, _ in devkit_imports(source)] == [line]


@pytest.mark.parametrize(
    "source",
    [
        "import devkits",
        "from devkitten import x",
        "from .devkit import x",
        "from offsets.devkit_notes import x",
        'APPS = ["devkit"]',
        'importlib.util.find_spec("devkit")',
    ],
)
def test_it_lets_other_names_and_the_app_label_pass(source):
    assert devkit_imports(source) == []
