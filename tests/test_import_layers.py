"""The package's layers only look down: read from the modules' import statements (lazy,
function-level ones included), no module imports one of a higher layer and no modules
import each other in a circle. The layers are drawn in docs/internals.md."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "numsoft"

#: Top to bottom; a module belongs to the first layer with a prefix of its name. The
#: package itself (``numsoft/__init__.py``) is the entry layer.
LAYERS = (
    (
        "entry points and tools",
        (
            "numsoft.__main__",
            "numsoft.info",
            "numsoft.tune",
            "numsoft.warmup",
            "numsoft._build",
            "numsoft._overloads",
            "numsoft._linked",
            "numsoft.variants._overloads",
            "numsoft.fused._overloads",
            "numsoft.fused._fenchel_young_overloads",
            "numsoft.fused._divergence_overloads",
            "numsoft.fused._margin_overloads",
            "numsoft.fused._sampled_overloads",
            "numsoft.groups._overloads",
            "numsoft.torch",
        ),
    ),
    (
        "public functions",
        (
            "numsoft.core",
            "numsoft.special",
            "numsoft.dask",
            "numsoft.variants",
            "numsoft.fused",
            "numsoft.groups",
            "numsoft.gradients",
        ),
    ),  # fmt: skip
    ("array-type router", ("numsoft.route",)),
    ("front door", ("numsoft.frontdoor",)),
    ("backends", ("numsoft.cpu", "numsoft.cuda")),
    (
        "what every layer reads",
        (
            "numsoft.vocabulary",
            "numsoft._array_kinds",
            "numsoft._version",
            "numsoft._docstrings",
            "numsoft.cpu.machine",
            "numsoft.cpu.limits",
        ),
    ),  # fmt: skip
)

#: The modules an import below the entry layer may defer to the call that needs them,
#: each an optional library's door: numba-cuda, Dask, torch.
LAZY_ALLOWED = {"numsoft.frontdoor.gpu", "numsoft.cuda.memory", "numsoft.route.device",
                "numsoft.route.dask_calls", "numsoft.route.autograd",
                "numsoft.route.compiled"}  # fmt: skip


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


MODULES = _modules()


def _imports(name: str) -> list[tuple[str, bool]]:
    """(imported numsoft module, lazily) for every import statement of ``name``.
    ``from pkg import mod`` counts as an import of ``pkg.mod`` (Python runs ``pkg``'s
    ``__init__`` first either way, and a package's own ``__init__`` sits above it)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    eager = {id(n) for top in tree.body if not isinstance(top, scopes) for n in ast.walk(top)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = [f"{module}.{alias.name}" for alias in node.names]
            targets = [s for s in subs if s in MODULES] or [module]
        else:
            continue
        lazy = id(node) not in eager
        found += [(t, lazy) for t in targets if t in MODULES and t != name]
    return found


def layer_of(name: str) -> int:
    if name == "numsoft":
        return 0
    best = None  # (layer, prefix length): the longest prefix wins (cpu.machine is below cpu)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            within = name == prefix or name.startswith(prefix + ".")
            if within and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    assert best is not None, f"{name} is in no layer: add it to LAYERS (and docs/internals.md)"
    return best[0]


EDGES = {name: _imports(name) for name in MODULES}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_imports_no_module_of_a_higher_layer(name):
    mine = layer_of(name)
    up = [t for t, _ in EDGES[name] if layer_of(t) < mine]
    assert not up, f"{name} ({LAYERS[mine][0]}) imports up: {up}"


def test_no_import_circles():
    graph = {name: {t for t, _ in EDGES[name] if not t.startswith(name + ".")} for name in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v):
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                cycle = path[path.index(w) :] + [w]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if w not in state:
                visit(w)
        path.pop()
        state[v] = 2

    for v in sorted(graph):
        if v not in state:
            visit(v)


def test_lazy_imports_below_the_entry_layer_are_for_optional_libraries():
    lazy = {(name, t) for name in MODULES if layer_of(name) > 0 for t, is_lazy in EDGES[name]
            if is_lazy and t not in LAZY_ALLOWED}  # fmt: skip
    assert not lazy, f"lazy imports of numsoft modules without an optional library: {lazy}"


def test_the_reader_sees_eager_lazy_and_relative_imports():
    core = set(EDGES["numsoft.core"])
    assert ("numsoft.frontdoor.run", False) in core  # from .frontdoor.run import ...
    assert ("numsoft.frontdoor.gpu", True) in core  # from .frontdoor import gpu, in a function
    assert ("numsoft.cpu.limits", False) in set(EDGES["numsoft.cpu.threads"])  # from . import
    assert (
        layer_of("numsoft.cpu.machine")
        > layer_of("numsoft.cpu.rows")
        > layer_of("numsoft.frontdoor.run")
    )
