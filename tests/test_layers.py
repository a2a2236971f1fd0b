"""Imports point down only, type-only imports (under ``if TYPE_CHECKING:``) included: the layers
of the house, top to bottom, as ``docs/design.md`` draws them. A module may import its own layer
and those below it, never one above; within the package no import runs in circles; and no
function imports one of the package's own modules except where the reason below says why (an
optional dependency, or the import a light ``import`` defers)."""

import ast
import pathlib

import ipython_cudatime

LIBRARY = pathlib.Path(ipython_cudatime.__file__).parent
PACKAGE = "ipython_cudatime"

# Top to bottom; a module belongs to the layer of the longest prefix that names it.
LAYERS = (
    ("the package", ("ipython_cudatime",)),
    ("notebook/", ("ipython_cudatime.notebook",)),
    ("features/", ("ipython_cudatime.features",)),
    ("command/", ("ipython_cudatime.command",)),
    ("render/", ("ipython_cudatime.render",)),
    ("repeat/", ("ipython_cudatime.repeat",)),
    ("measure/", ("ipython_cudatime.measure",)),
    ("results/", ("ipython_cudatime.results",)),
    ("backends/", ("ipython_cudatime.backends",)),
    ("units.py", ("ipython_cudatime.units",)),
)

# (module, function, imported module): why it is imported when the function runs, not before.
DEFERRED = {
    ("ipython_cudatime", "load_ipython_extension", "ipython_cudatime.notebook.magics"):
        "IPython's magic machinery loads with the extension, so that importing the package stays light",
    ("ipython_cudatime", "unload_ipython_extension", "ipython_cudatime.notebook.magics"): "as load_ipython_extension",
    ("ipython_cudatime", "load", "ipython_cudatime.results.store"):
        "the package's names load when first used (its __getattr__): import ipython_cudatime takes ~2 ms",
    ("ipython_cudatime", "load", "ipython_cudatime.features"): "as load's store",
    ("ipython_cudatime", "report", "ipython_cudatime.notebook.display"): "as load's store",
    ("ipython_cudatime", "report", "ipython_cudatime.features"): "as load's store",
    ("ipython_cudatime", "contrast", "ipython_cudatime.results.ratios"): "as load's store",
    ("ipython_cudatime", "contrast", "ipython_cudatime.features"): "as load's store",
    ("ipython_cudatime.features.roofline", "watch", "ipython_cudatime.features.roofline.op_counter"):
        "op_counter imports torch: only with --roofline, once the user has imported torch",
}


def _modules():
    """{dotted name: parsed tree} for every module of the package."""
    found = {}
    for path in LIBRARY.rglob("*.py"):
        parts = (PACKAGE, *path.relative_to(LIBRARY).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = (ast.parse(path.read_text()), path.name == "__init__.py")
    return found


def _targets(module, is_package, node, modules):
    """The package modules an import statement names: ``from . import store`` names ``store``,
    ``from .features import Feature`` the package ``features``; none for an import from outside."""
    if isinstance(node, ast.Import):
        return [_known(alias.name, modules) for alias in node.names if alias.name.startswith(PACKAGE)]
    if node.level == 0:
        base = node.module or ""
        if not base.startswith(PACKAGE):
            return []
    else:
        parts = module.split(".")
        base = ".".join(parts[: len(parts) - node.level + (1 if is_package else 0)] + ([node.module] if node.module else []))
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _known(base, modules) for alias in node.names]


def _imports(modules, types=True):
    """(importer, imported, the function it is in or None) for every import of a package module;
    with ``types``, the imports under ``if TYPE_CHECKING:`` too: a type names its module as surely
    as a call does, and a lower floor typed against a higher one knows it."""
    for module, (tree, is_package) in modules.items():
        functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(n): f.name for f in functions for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and (types or not _type_checking_only(tree, node)):
                for target in _targets(module, is_package, node, modules):
                    yield module, target, inside.get(id(node))


def _type_checking_only(tree, node):
    """An import under ``if TYPE_CHECKING:`` is read by the type checker, never run."""
    return any(isinstance(block, ast.If) and getattr(block.test, "id", None) == "TYPE_CHECKING"
               and any(node is child for child in ast.walk(block)) for block in ast.walk(tree))


def _known(name, modules):
    """``from .features import Feature`` names the package ``features``; ``from . import store`` a module."""
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def _layer(module):
    prefixes = [(len(prefix), index) for index, (_, names) in enumerate(LAYERS) for prefix in names
                if module == prefix or module.startswith(prefix + ".")]
    assert prefixes, f"{module} is in no layer: add it to LAYERS and to docs/design.md"
    return max(prefixes)[1]


def test_every_import_points_down_or_sideways():
    modules = _modules()
    upward = [f"{importer} ({LAYERS[_layer(importer)][0]}) imports {imported} ({LAYERS[_layer(imported)][0]})"
              for importer, imported, _ in _imports(modules) if _layer(imported) < _layer(importer)]
    assert upward == []


def test_no_import_cycle_within_the_package():
    modules = _modules()
    graph = {}
    for importer, imported, function in _imports(modules):
        if function is None and importer != imported and not imported.startswith(importer + "."):
            graph.setdefault(importer, set()).add(imported)

    def cycle_from(start, path):
        for nxt in graph.get(path[-1], ()):
            if nxt == start:
                return path + [nxt]
            if nxt not in path:
                found = cycle_from(start, path + [nxt])
                if found:
                    return found
        return None

    cycles = [cycle_from(module, [module]) for module in graph]
    assert [c for c in cycles if c] == []


def test_a_function_imports_our_own_modules_only_for_a_stated_reason():
    deferred = {(importer, function, imported) for importer, imported, function in _imports(_modules(), types=False)
                if function is not None}
    assert deferred == set(DEFERRED)


def test_docs_design_lists_the_layers_in_this_order():
    design = (LIBRARY.parent / "docs" / "design.md").read_text()
    positions = [design.find(f"**{title}**") for title, _ in LAYERS]
    assert -1 not in positions and positions == sorted(positions), positions
