"""docs/architecture.md's map holds the package as it is: every module named once, in its folder,
each importing only modules above it in the map (at run time or for the type checker alike, so
there is no circle either way), none longer than MAX_MODULE_LINES, and every module or file a
docstring or comment names in backticks is there.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mcp
import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "codescout_mcp"
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## The map", 1)[1].split("```")[1]
# The most lines one module may hold: past it, a module holds more than one idea.
MAX_MODULE_LINES = 550
# Names in backticks that are examples of a user's paths, not files of this project.
EXAMPLES = {"src/a.py", "Src/a.py"}


def mapped() -> list[str]:
    """The map's entries in order, as paths in the package: `facts/` for a folder, then its modules."""
    entries: list[str] = []
    folder = ""
    for line in MAP.splitlines():
        found = re.match(r"^( +)(\S+)", line)
        if found is None:
            continue
        indent, name = len(found.group(1)), found.group(2)
        if indent == 2:
            folder = name if name.endswith("/") else ""
            entries.append(name)
        elif indent == 4 and name.endswith(".py"):
            assert folder, f"{name} is indented under no folder"
            entries.append(folder + name)
    return entries


def modules() -> list[str]:
    """The package's modules, as paths in it (folders' __init__.py and __main__.py aside)."""
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


def test_the_map_names_every_module_once() -> None:
    entries = [entry for entry in mapped() if entry.endswith(".py")]
    assert len(entries) == len(set(entries)), "a module named twice"
    assert sorted(entries) == modules()


def test_no_module_passes_the_line_bound() -> None:
    sizes = {name: len((PACKAGE / name).read_text(encoding="utf-8").splitlines()) for name in modules()}
    assert {name: size for name, size in sizes.items() if size > MAX_MODULE_LINES} == {}


def _module_of(dotted: str) -> str | None:
    """The map entry a dotted name imports: a module (`facts/git.py`) or a folder's __init__ (`facts/`)."""
    parts = dotted.split(".")
    if parts[0] != "codescout_mcp":
        return None
    path = "/".join(parts[1:])
    if (PACKAGE / f"{path}.py").is_file():
        return f"{path}.py"
    if path and (PACKAGE / path / "__init__.py").is_file():
        return f"{path}/"
    return None


def imports(path: Path) -> list[tuple[int, str]]:
    """Every module of the package `path` imports, wherever the import is (a function, a type
    checker's block), with its line: `from X import Y` counts Y when Y is a module, else X."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [
                f"{node.module}.{alias.name}" if _module_of(f"{node.module}.{alias.name}") else node.module
                for alias in node.names
            ]
        else:
            continue
        found += [(node.lineno, entry) for entry in map(_module_of, names) if entry is not None]
    return found


@pytest.mark.parametrize("module", modules())
def test_each_module_imports_only_what_is_above_it_in_the_map(module: str) -> None:
    order = {entry: place for place, entry in enumerate(mapped())}
    below = [f"line {line}: {entry}" for line, entry in imports(PACKAGE / module) if order[entry] >= order[module]]
    assert below == [], f"{module} imports what the map puts below it (or itself)"


def test_every_file_a_docstring_or_comment_names_is_there() -> None:
    named = re.compile(r"`([\w./-]+\.(?:py|md|json|toml|txt|yml|yaml|svg|png))`")
    site = Path(str(mcp.__file__)).parent.parent  # the SDK's own files, as installed
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for name in set(named.findall(text)) - EXAMPLES:
            places = [ROOT / name, PACKAGE / name, path.parent / name, site / name]
            if not any(place.exists() for place in places):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert missing == []


# What sits beside the folders and any layer may import: flag defaults, failures, the version.
GROUND = {"limits.py", "failure.py", "version.py"}


def folders() -> list[str]:
    return sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))


def may_import(folder: str) -> set[str]:
    """The folders (and `server`) a folder's `__init__` docstring says it may import."""
    doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    found = re.search(r"^May import: (.+?)\.$", doc, re.M | re.S)
    assert found is not None, f"{folder}/__init__.py does not say what it may import"
    words = " ".join(found.group(1).split())
    if words.startswith("nothing of the package"):
        return set()
    return {word.strip() for word in words.split(",")}


def test_every_module_is_in_a_layer_folder_or_beside_them_on_purpose() -> None:
    loose = {name for name in modules() if "/" not in name}
    assert loose == GROUND | {"server.py"}
    assert folders() == ["answers", "cli", "core", "facts", "http", "stdio", "system", "tools"]


def violations(folder: str, allowed: set[str]) -> list[str]:
    """Each import in `folder` of a layer it may not import, with its place."""
    wrong = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for line, entry in imports(path):
            layer = entry.split("/", 1)[0] if "/" in entry else entry.removesuffix(".py")
            if entry not in GROUND and layer != folder and layer not in allowed:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {entry}")
    return wrong


@pytest.mark.parametrize("folder", folders())
def test_each_folder_imports_only_what_its_init_allows(folder: str) -> None:
    allowed = may_import(folder)
    assert allowed <= {*folders(), "server"}, "a name in May import: that is no layer"
    assert violations(folder, allowed) == [], f"{folder}/ may import only {sorted(allowed)}"


def test_the_modules_beside_the_folders_import_nothing_of_the_package() -> None:
    assert [name for name in sorted(GROUND) if imports(PACKAGE / name)] == []


def test_the_folder_rule_sees_a_layer_reached_for() -> None:
    """The tools speak in the SDK's words: without answers among what they may import, the
    check names each place they do."""
    wrong = violations("tools", may_import("tools") - {"answers"})
    assert wrong and all(": answers/" in place for place in wrong)
