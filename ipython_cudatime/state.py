"""What running the same cell again does to the user's state, and how we undo it.

``%cudatime`` runs a cell many times; a notebook expects it to leave the state of
*one* run. Names the cell binds or deletes at top level are put back before every
later run (``NameSnapshot``), so ``x += 1`` on an int, ``arr = arr * 2`` and
``del x`` act once. Changes made *inside* objects cannot be put back, so
``in_place_changes`` names them and the magic then runs the cell once only:
augmented assignment to a mutable value, mutating methods (``.append``,
``.update``, torch's trailing-underscore methods, ``optimizer.step()``), the
working directory and pyplot's figures. ``loss.backward()`` is deliberately not
on the list: it accumulates gradients, but it is what training cells time.

``CellRepeats`` is what the runner calls around the later runs (see
``runner.Repeats``): it restores the names, discards what those runs print as
it is written, and closes the figures and widgets they create; afterwards the
names hold the cold run's objects again.
"""

import ast
import contextlib
import io
import os
import sys
import types
from numbers import Number  # NumPy scalars, Fraction, Decimal: immutable too

from .runner import Repeats

# Immutable values: augmented assignment on them rebinds the name, which the snapshot undoes.
IMMUTABLE = (int, float, complex, str, bytes, bool, tuple, frozenset, range, type(None))
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "add", "discard",
    "setdefault", "sort", "reverse", "appendleft", "extendleft", "popleft", "step",
})
# torch methods ending in "_" that leave the same state however often they run.
IDEMPOTENT_INPLACE = frozenset({"copy_", "fill_", "zero_", "requires_grad_", "share_memory_"})
_MISSING = object()


def top_level_names(tree):
    """Names a cell binds or deletes at its top level (assignments, del, imports, defs, for/with targets)."""
    names = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                names.add(child.id)
            elif isinstance(child, ast.alias) and child.name != "*":
                names.add((child.asname or child.name).partition(".")[0])
            elif not isinstance(child, (ast.Lambda, ast.comprehension)):
                visit(child)

    visit(tree)
    return sorted(names)


class NameSnapshot:
    """The values some names have in a namespace now; ``restore`` puts them back (or deletes them)."""

    def __init__(self, namespace, names):
        self.namespace = namespace
        self.saved = {name: namespace.get(name, _MISSING) for name in names}

    def restore(self):
        for name, value in self.saved.items():
            if value is not _MISSING:
                self.namespace[name] = value
            elif name in self.namespace:
                # A function's locals (a line magic inside a function) are a FrameLocalsProxy on
                # Python 3.13: no pop(), and a real local variable cannot be deleted from it.
                with contextlib.suppress(KeyError, ValueError, TypeError):
                    del self.namespace[name]


def _resolve(node, namespace):
    """The value of a ``name.attr.attr`` chain in ``namespace``, or _MISSING (calls nothing but getattr)."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id, _MISSING)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, namespace)
        if owner is _MISSING:
            return _MISSING
        try:
            return getattr(owner, node.attr)
        except Exception:
            return _MISSING
    return _MISSING


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def executed_nodes(statement):
    """The nodes of a top-level statement that run with it (not the bodies of defs and lambdas)."""
    if isinstance(statement, _SCOPES):
        return
    pending = [statement]
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _SCOPES):
            pending.extend(ast.iter_child_nodes(node))


def _augmented_change(node, namespace, fresh):
    """``x += …`` where x holds a mutable value now, or ``a[i] += …`` / ``obj.n += …``."""
    target = node.target
    if isinstance(target, ast.Name):
        value = namespace.get(target.id, _MISSING)
        if target.id in fresh or value is _MISSING or isinstance(value, IMMUTABLE) or isinstance(value, Number):
            return []
        return [f"augmented assignment to {target.id} changes a {type(value).__name__} in place"]
    if _root(target) in fresh:
        return []
    return [f"augmented assignment to {ast.unparse(target)} changes an object in place"]


def _method_change(func, namespace, fresh):
    """``obj.append(…)``, ``x.add_(…)``, ``optimizer.step()`` on an object that is not a module."""
    name = func.attr
    inplace = name.endswith("_") and not name.startswith("_") and name not in IDEMPOTENT_INPLACE
    if not (inplace or name in MUTATING_METHODS) or _root(func.value) in fresh:
        return []
    owner = _resolve(func.value, namespace)
    if owner is _MISSING or isinstance(owner, types.ModuleType):
        return []
    return [f"{ast.unparse(func)}() changes {ast.unparse(func.value)} in place"]


def _plainly_bound(statement):
    """Names a statement binds to new objects (later statements then change fresh objects, not the user's)."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.For, ast.With, ast.Import, ast.ImportFrom,
                              ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return set(top_level_names(ast.Module([statement], [])))
    return set()


def in_place_changes(tree, namespace):
    """Sentences naming what the cell changes inside objects that exist before it runs.

    Read against the values the names have *now* (before the cold run): ``x += 1`` is
    harmless on an int and an in-place change on a list or a tensor.
    """
    found, fresh = [], set()
    for statement in tree.body:
        for node in executed_nodes(statement):
            if isinstance(node, ast.AugAssign):
                found += _augmented_change(node, namespace, fresh)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                found += _method_change(node.func, namespace, fresh)
        fresh |= _plainly_bound(statement)
    return list(dict.fromkeys(found))


def _pyplot_figures():
    """pyplot's open figures and how many artists each holds (empty when pyplot was never imported)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or "matplotlib.pyplot" not in sys.modules:
        return {}
    figures = {}
    for manager in helpers.Gcf.get_all_fig_managers():
        figure = manager.canvas.figure
        figures[manager.num] = (id(figure), sum(len(axes.get_children()) for axes in figure.axes))
    return figures


def _live_widgets():
    """ipywidgets' registry of open widgets (ipywidgets 8: ``_instances``; 7: ``Widget.widgets``), or {}."""
    module = sys.modules.get("ipywidgets.widgets.widget")
    if module is None:
        return {}
    registry = getattr(module, "_instances", None)
    return registry if registry is not None else module.Widget.widgets


class ProcessState:
    """Process-wide state a run can change that no name snapshot restores: the working
    directory (``%cd``, ``os.chdir``) and pyplot's figures (``plt.plot`` draws on the current one)."""

    def __init__(self):
        self.cwd = os.getcwd()
        self.figures = _pyplot_figures()

    def changes(self):
        found = []
        if os.getcwd() != self.cwd:
            found.append("the cell changes the working directory")
        if _pyplot_figures() != self.figures:
            found.append("the cell draws with pyplot, whose current figure is shared state")
        return found


class _Sink(io.TextIOBase):
    """A text stream that drops what is written to it, as it is written (nothing is kept)."""

    def writable(self):
        return True

    def write(self, text):
        return len(text)


@contextlib.contextmanager
def _discard_output(shell):
    """Drop what runs print (sys.stdout/stderr) and display (the shell's display publisher)."""
    from IPython.core.displaypub import DisplayPublisher

    class Discard(DisplayPublisher):
        def publish(self, *args, **kwargs):
            pass

        def clear_output(self, wait=False):
            pass

    saved = sys.stdout, sys.stderr, shell.display_pub
    sys.stdout = sys.stderr = _Sink()
    shell.display_pub = Discard(shell=shell)
    try:
        yield
    finally:
        sys.stdout, sys.stderr, shell.display_pub = saved


@contextlib.contextmanager
def _close_new_figures_and_widgets():
    """Close the pyplot figures and ipywidgets created inside the block: only the cold run's stay."""
    figures, widgets = set(_pyplot_figures()), set(_live_widgets())
    try:
        yield
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")
        for number in set(_pyplot_figures()) - figures:
            pyplot.close(number)
        registry = _live_widgets()
        for key in set(registry) - widgets:
            with contextlib.suppress(Exception):
                registry[key].close()


class CellRepeats(Repeats):
    """The runner's hooks for a cell of the user's (see ``runner.Repeats``).

    ``begin`` (before the cold run) snapshots the names the cell binds and reads what it
    would change in place; ``after_cold`` adds process-wide changes, says whether later
    runs may follow and snapshots the names again; ``reset`` restores the first snapshot
    before each later run and ``end`` the second one after them, so the namespace holds
    the cold run's objects: its figures and widgets are the ones left open.
    ``reasons`` is then what made (or would have made) the cell run once only.
    """

    def __init__(self, shell, namespace, tree, names):
        self.shell, self.namespace, self.tree, self.names = shell, namespace, tree, names
        self.reasons = []
        self._snapshot = self._process = self._cold = None

    def begin(self):
        self._snapshot = NameSnapshot(self.namespace, self.names)
        self._process = ProcessState()
        self.reasons = in_place_changes(self.tree, self.namespace)

    def after_cold(self):
        self.reasons += self._process.changes()
        self._cold = NameSnapshot(self.namespace, self.names)
        return not self.reasons

    def reset(self):
        self._snapshot.restore()

    def end(self):
        if self._cold is not None:
            self._cold.restore()

    @contextlib.contextmanager
    def quiet(self):
        with _discard_output(self.shell), _close_new_figures_and_widgets():
            yield
