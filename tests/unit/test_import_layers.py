"""Every import of offsets/ and dashboard/ runs down the layers docs/architecture.md lists.

The files are read with `ast`, not imported: an import inside a function counts as much as one
at the top (lazy imports are where cycles hide).
"""

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("offsets", "dashboard")
# A package's pure rules count as the domain wherever they live (docs/architecture.md).
RULES_MODULE = "rules"
RULES_LAYER = "domain"


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    source: str  # the importing file's package
    target: str  # the imported package
    name: str  # the module as written, resolved


def layers(text: str) -> dict[str, int]:
    """Each package's line in the numbered list under "## Layers", counted from 1."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    order: dict[str, int] = {}
    for line in section.splitlines():
        numbered = re.match(r"(\d+)\. (.*)", line)
        if numbered:
            # The names come before the parenthesis that says what they hold.
            names = re.findall(r"`([a-z_]+)`", numbered.group(2).split(" (", 1)[0])
            order |= dict.fromkeys(names, int(numbered.group(1)))
    return order


def package_of(module: str) -> str | None:
    """`offsets.edits.live` -> "edits", `dashboard.views` -> "dashboard"; None outside both."""
    parts = module.split(".")
    if parts[0] == "dashboard":
        return "dashboard"
    if parts[0] != "offsets" or len(parts) < 2:
        return None
    if parts[-1] == RULES_MODULE or _is_rules_module(parts):
        return RULES_LAYER
    return parts[1]


def _is_rules_module(parts: list[str]) -> bool:
    """Whether an imported name (`offsets.alerts.rules.Condition`) lies in a rules module."""
    return RULES_MODULE in parts[2:-1] and (ROOT.joinpath(*parts[:-1]).with_suffix(".py")).exists()


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The modules (or module.name) one import statement names, relative ones resolved."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        anchor = here[: len(here) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    # `from offsets import tuning` imports the module offsets.tuning.
    return [f"{base}.{alias.name}" for alias in node.names]


def imports_of(path: Path) -> list[Import]:
    module = module_of(path)
    source = package_of(module) or ""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for name in imported_modules(node, module, path.name == "__init__.py"):
            target = package_of(name)
            if target and target != source:
                found.append(Import(path.relative_to(ROOT), node.lineno, source, target, name))
    return found


def all_imports() -> list[Import]:
    return [
        found
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for found in imports_of(path)
    ]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each group of packages that import one another, round and round (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def layer_problems(found: list[Import], order: dict[str, int]) -> list[str]:
    """What breaks the order: an import up it, a package it does not list, packages that
    import each other."""
    problems = []
    edges: dict[str, set[str]] = {}
    first: dict[tuple[str, str], Import] = {}
    for imp in found:
        where = f"{imp.path}:{imp.line}"
        missing = [p for p in (imp.source, imp.target) if p not in order]
        if missing:
            problems.append(
                f"{where}: {' and '.join(missing)} not in docs/architecture.md's layers"
            )
        elif order[imp.target] > order[imp.source]:
            problems.append(
                f"{where}: {imp.source} (line {order[imp.source]}) imports {imp.name}, "
                f"{imp.target} (line {order[imp.target]}): up the layers"
            )
        edges.setdefault(imp.source, set()).add(imp.target)
        first.setdefault((imp.source, imp.target), imp)
    for group in cycles(edges):
        links = [
            f"{first[a, b].path}:{first[a, b].line} ({a} -> {b})"
            for a in group
            for b in group
            if (a, b) in first
        ]
        problems.append(f"{', '.join(group)} import each other: {'; '.join(links)}")
    return problems


def test_every_import_runs_down_the_layers():
    order = layers((ROOT / "docs" / "architecture.md").read_text())
    assert order, "docs/architecture.md has no numbered list under ## Layers"
    problems = layer_problems(all_imports(), order)
    assert not problems, "\n".join(problems)


def test_the_pure_rules_modules_import_only_the_domain_and_below():
    order = layers((ROOT / "docs" / "architecture.md").read_text())
    rules = sorted(ROOT.glob("offsets/**/rules.py"))
    assert rules, "no rules.py module found"
    for path in rules:
        for imp in imports_of(path):
            assert order[imp.target] <= order[RULES_LAYER], f"{imp.path}:{imp.line}: {imp.name}"


# The checks themselves, on made-up imports.

ORDER = {"tuning": 1, "formats": 2, "kafka": 3, "models": 4, "edits": 5, "alerts": 5, "api": 6}


def imp(source: str, target: str, name: str = "", line: int = 1) -> Import:
    return Import(Path(f"offsets/{source}/x.py"), line, source, target, name or target)


def test_an_import_down_the_layers_passes():
    found = [imp("api", "edits"), imp("edits", "models"), imp("kafka", "tuning")]
    assert layer_problems(found, ORDER) == []


def test_an_import_up_the_layers_is_named_with_its_file_and_line():
    problems = layer_problems([imp("kafka", "models", "offsets.models.Cluster", 7)], ORDER)
    assert problems == [
        "offsets/kafka/x.py:7: kafka (line 3) imports offsets.models.Cluster, models (line 4): "
        "up the layers"
    ]


def test_two_packages_on_one_line_may_not_import_each_other():
    problems = layer_problems([imp("edits", "alerts"), imp("alerts", "edits", line=9)], ORDER)
    assert len(problems) == 1
    assert problems[0].startswith("alerts, edits import each other:")
    assert "offsets/alerts/x.py:9 (alerts -> edits)" in problems[0]


def test_a_package_the_layers_do_not_list_is_refused():
    assert layer_problems([imp("api", "newthing")], ORDER) == [
        "offsets/api/x.py:1: newthing not in docs/architecture.md's layers"
    ]


def test_the_layers_are_read_from_the_numbered_list():
    text = "# A\n\n## Layers\n\n1. `tuning` (says `why`)\n2. `edits`, `alerts` (both)\n\n## B\n"
    assert layers(text) == {"tuning": 1, "edits": 2, "alerts": 2}


def test_a_rules_module_counts_as_the_domain_and_a_module_as_its_package():
    assert package_of("offsets.alerts.rules") == "domain"
    assert package_of("offsets.alerts.rules.Condition") == "domain"
    assert package_of("offsets.alerts.evaluation") == "alerts"
    assert package_of("offsets.tuning") == "tuning"
    assert package_of("dashboard.views") == "dashboard"
    assert package_of("django.db") is None


def test_lazy_and_relative_imports_are_found():
    tree = ast.parse("def f():\n    from offsets.refresh import run\n\nfrom . import live\n")
    names = [
        name
        for node in ast.walk(tree)
        for name in imported_modules(node, "offsets.edits.apply", False)
    ]
    assert sorted(names) == ["offsets.edits.live", "offsets.refresh.run"]
