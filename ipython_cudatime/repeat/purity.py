"""What a cell's code says about repeating it: whether its code is proven pure.

Whether a cell may run again is decided from what its first run changed (``evidence``), not
from its spelling: no list of calls can tell what a function does inside. The code can still
say one thing for certain: a cell made only of operators on arrays and plain values, a
framework's own functions (``np.matmul(a, b)``, ``torch.bmm(x, x)``, ``jnp.dot(x, x)``) and
builtins that make new values (``sorted``, ``len``), with no ``out=`` or ``inplace=`` argument,
binding plain names, is pure: it may skip the costly parts of the evidence (checksums of
arrays, walks deep into objects), never the cheap ones (a tensor's version counter sees
``inplace=True`` behind a pure-looking call). Anything it cannot prove goes through the evidence.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable, Iterable
from typing import Any

from ..measure.batching import top_level_names
from .fingerprint import MISSING

Lookup = Callable[[str], Any]  # what a name holds before the cold run, MISSING where unbound
ARRAY_LIBRARIES = frozenset({"numpy", "pandas", "math", "cmath", "jax", "jaxlib"})  # besides the frameworks
# Builtins that make a new value from their arguments and change nothing.
PURE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset",
    "hash", "int", "isinstance", "len", "list", "map", "max", "min", "pow", "print", "range", "repr", "reversed",
    "round", "set", "sorted", "str", "sum", "tuple", "type", "zip", "ord", "chr",
})
VALUES = (int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset)  # builtins' own values
WRITES = frozenset({"out", "inplace"})  # keyword arguments that write into an argument
PURE_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.Pass, ast.Import, ast.ImportFrom, ast.For, ast.If,
                   ast.With, ast.Break, ast.Continue)
PURE_EXPRESSIONS = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Tuple, ast.List,
                    ast.Set, ast.Dict, ast.JoinedStr, ast.FormattedValue, ast.Slice, ast.Starred, ast.ListComp,
                    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.keyword, ast.Load,
                    ast.Store, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.alias)


def _root(name: object) -> str:
    return name.partition(".")[0] if isinstance(name, str) else ""


def _framework_function(value: Any) -> bool:
    """A function or class itself (``np.matmul``, a NumPy ufunc), not an object that is called (a
    module such as ``bn``, whose call may change its own state)."""
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)) or (
        type(value).__name__ == "ufunc")


class Purity:
    """Whether a cell's code is proven pure (see the module's doc), given what its names held
    before the cold run (``lookup``) and the frameworks' module names."""

    def __init__(self, tree: ast.Module, lookup: Lookup, frameworks: Iterable[str],
                 costly: Callable[[Any], bool] = lambda value: False) -> None:
        self.tree, self.lookup = tree, lookup
        self.modules = frozenset(frameworks) | ARRAY_LIBRARIES
        self.bound = set(top_level_names(tree))
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - self.bound
        # A value only a checksum can see (a NumPy array): a function may write into it, or into a
        # view of it, where no version counter tells; operators never do.
        self.holds_costly = any(costly(value) for value in map(self.lookup, used) if value is not MISSING)

    def proven(self) -> bool:
        statements = list(ast.walk(ast.Module(self.tree.body, [])))
        return all(map(self._allowed, statements[1:]))

    def _allowed(self, node: ast.AST) -> bool:
        if isinstance(node, ast.stmt):
            return isinstance(node, PURE_STATEMENTS) and self._binds_names_only(node)
        if isinstance(node, ast.Name):
            return isinstance(node.ctx, ast.Store) or self._known_name(node.id)
        if isinstance(node, ast.Attribute):
            return isinstance(node.ctx, ast.Load) and self._module_path(node.value)
        if isinstance(node, ast.Subscript):
            return isinstance(node.ctx, ast.Load)
        if isinstance(node, ast.Call):
            return self._pure_call(node)
        return isinstance(node, (*PURE_EXPRESSIONS, ast.withitem, ast.expr_context))

    def _binds_names_only(self, statement: ast.stmt) -> bool:
        targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
        names = [target for target in targets if target is not None]
        return all(isinstance(node, (ast.Name, ast.Tuple, ast.List, ast.Store)) for target in names
                   for node in ast.walk(target))

    def _value(self, name: str) -> Any:
        value = self.lookup(name)
        return getattr(builtins, name, MISSING) if value is MISSING else value

    def _known_name(self, name: str) -> bool:
        """A name the cell binds itself, a module or function of a framework, an array or a plain value."""
        if name in self.bound:
            return True
        value = self._value(name)
        if value is getattr(builtins, name, None):
            return name in PURE_BUILTINS
        if isinstance(value, types.ModuleType):
            return _root(value.__name__) in self.modules
        if callable(value) and _root(getattr(value, "__module__", None)) in self.modules:
            return True
        return isinstance(value, VALUES) or _root(type(value).__module__) in self.modules

    def _module_path(self, node: ast.expr) -> bool:
        """``np``, ``torch.nn.functional``: an attribute chain whose root names a framework's module,
        or an attribute of an array (``x.T``, ``x.shape``)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and self._known_name(node.id)

    def _pure_call(self, call: ast.Call) -> bool:
        """A pure builtin, or a framework's function (not a method of an object, which may write into
        it) where the cell reads no value a checksum alone can see; with no ``out=``/``inplace=``
        and no function passed on (``map(f, xs)`` runs ``f``)."""
        if any(keyword.arg in WRITES for keyword in call.keywords) or any(map(self._passes_code, _arguments(call))):
            return False
        func = call.func
        if isinstance(func, ast.Name):
            value = self._value(func.id)
            if func.id in self.bound or value is MISSING:
                return False
            if value is getattr(builtins, func.id, None):
                return func.id in PURE_BUILTINS
            framework = _framework_function(value) and _root(getattr(value, "__module__", None)) in self.modules
            return framework and not self.holds_costly
        if not isinstance(func, ast.Attribute):
            return False
        owner = func.value
        while isinstance(owner, ast.Attribute):
            owner = owner.value
        return isinstance(owner, ast.Name) and isinstance(self._value(owner.id), types.ModuleType) and (
            _root(self._value(owner.id).__name__) in self.modules) and owner.id not in self.bound and (
            not self.holds_costly)

    def _passes_code(self, node: ast.expr) -> bool:
        """Whether an argument is a function (a name or a module's attribute bound to one)."""
        value: Any = MISSING
        if isinstance(node, ast.Name):
            value = self._value(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self._value(node.value.id)
            value = getattr(owner, node.attr, MISSING) if isinstance(owner, types.ModuleType) else MISSING
        return value is not MISSING and callable(value) and not isinstance(value, type)


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(keyword.value for keyword in call.keywords)]


def proven_pure(tree: ast.Module, lookup: Lookup, frameworks: Iterable[str],
                costly: Callable[[Any], bool] = lambda value: False) -> bool:
    """Whether the cell's code is proven pure (see ``Purity``; ``costly(value)``: whether only a
    checksum can see a change in ``value``); unproven is not impure, only unproven."""
    try:
        return Purity(tree, lookup, frameworks, costly).proven()
    except Exception:  # a value that cannot be inspected proves nothing
        return False
