"""The package's layers (docs/architecture.md), checked on the source.

Every import of a softrep module, lazy ones inside functions included, must go
to the same layer or one below it; the import graph has no cycle; and no module
reaches into another module's private names.
"""

import ast
import os

import pytest

import softrep

ROOT = os.path.dirname(os.path.abspath(softrep.__file__))

# Lowest first.  The top-level __init__ and __main__ may import anything.
LAYERS = [
    ("primitives",),
    ("algorithms",),
    ("cpu", "cuda"),
    ("ops",),
    ("nn", "optim"),
    ("tools", "distributed"),
]


def _modules():
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        if "__pycache__" in dirpath:
            continue
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                is_pkg = rel.endswith(".__init__")
                out[rel[: -len(".__init__")] if is_pkg else rel] = (path, is_pkg)
    return out


MODULES = _modules()


def _layer(module):
    if module in ("softrep", "softrep.__main__"):
        return None  # the top: the public API and the command line
    parts = module.split(".")
    for i, names in enumerate(LAYERS):
        if parts[1] in names:
            return i
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS and docs/architecture.md")


def _resolve(module, is_pkg, node):
    """Absolute softrep module names that an import node refers to."""
    names = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level == 0:
        base = node.module or ""
        names = _from_names(base, node)
    else:
        pkg = module.split(".") if is_pkg else module.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([node.module] if node.module else []))
        names = _from_names(base, node)
    return [n for n in names if n in MODULES]


def _from_names(base, node):
    """`from base import a, b`: the submodules a and b where they are modules,
    else base itself (a name defined in base)."""
    subs = [f"{base}.{a.name}" for a in node.names]
    return [s if s in MODULES else base for s in subs]


def _imports():
    graph, private, trees = {}, [], {}
    for module, (path, is_pkg) in MODULES.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        trees[module] = tree
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _resolve(module, is_pkg, node)
                deps.update(t for t in targets if t != module)
                if isinstance(node, ast.ImportFrom) and targets:
                    for a in node.names:
                        if a.name.startswith("_") and not a.name.startswith("__"):
                            private.append(f"{module}: from {node.module or '.'} import {a.name}")
        graph[module] = deps
    return graph, private, trees


GRAPH, PRIVATE_IMPORTS, TREES = _imports()


def test_every_import_goes_down_the_layers():
    bad = []
    for module, deps in GRAPH.items():
        mine = _layer(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = _layer(dep)
            if theirs is None or theirs > mine:
                bad.append(f"{module} (layer {mine}) imports {dep} (layer {theirs})")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycles():
    # A package's __init__ importing its own submodules is not a cycle of the
    # code: drop package -> own-submodule edges, then look for cycles.
    graph = {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in GRAPH.items()}
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(cycles)


def test_no_private_names_of_other_modules():
    bad = list(PRIVATE_IMPORTS)
    for module, tree in TREES.items():
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                path, is_pkg = MODULES[module]
                for a in node.names:
                    for target in _resolve(module, is_pkg, node):
                        if target.endswith("." + a.name):
                            aliases[a.asname or a.name] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{module}: {node.value.id}.{node.attr} ({aliases[node.value.id]})")
    assert not bad, "\n".join(sorted(set(bad)))


def test_top_level_holds_packages():
    entries = sorted(e for e in os.listdir(ROOT) if e != "__pycache__")
    loose = [e for e in entries if e.endswith(".py") and e not in ("__init__.py", "__main__.py")]
    assert not loose, f"modules outside the layer packages: {loose}"


@pytest.mark.parametrize("name", sorted(softrep.__all__))
def test_public_names_are_written_out(name):
    assert hasattr(softrep, name)
    with open(os.path.join(ROOT, "__init__.py")) as f:
        src = f.read()
    assert "import *" not in src
    assert name in src
