"""Which cells may run again: only what is recognisably safe to repeat; the rest runs once, and says why.

``%cudatime`` promises a notebook left as one run leaves it. The names a cell binds are put
back between runs (``state.NameSnapshot``); a change inside an object, a file, the
environment or the terminal cannot be. Python cannot be proven free of side effects, and
the two mistakes do not cost the same: repeating an unsafe cell corrupts the user's data,
running a safe one once loses warm statistics, which the report names and ``-n`` restores.
So a cell repeats only when every statement it runs is recognisably safe:

- binding and deleting plain names; the final expression; calls whose value is used (kept,
  passed on, shown), unless the call is known to act (``next``, ``input``, ``lst.pop()``,
  ``os.system``, ``open(f, "w")``, a method of a file, a logger or a random generator);
- calls made for their effect (a statement whose value is discarded, or a final call that
  returned None) only when they are framework functions or methods of arrays and
  framework objects that work out of place (``tf.matmul(x, x)``, ``a.sum()``), output
  (``print``, ``display``; later runs are quiet), harmless standard functions
  (``time.sleep``), or idempotent and meant for timing (``loss.backward()``, ``copy_``,
  ``fill_``, ``zero_``, ``out[:] = ...``);
- changes to objects the cell made itself just before (``d = {}`` then ``d["k"] = 1``).

Everything else runs once: stores into subscripts and attributes, augmented assignment
on a mutable value (whatever its name), mutating or in-place methods, shell commands and
magics other than a few that only read, ``out=`` arguments, loops doing any of these.
The decision is read after the cold run, against what the names held before it and hold
after it, so an alias (``a = t`` then ``a += 1``) or a loop variable is judged by its value.
"Framework" means the modules of the device registry and NumPy.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import io
import random
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from numbers import Number  # NumPy scalars, Fraction, Decimal: immutable too
from typing import Any

MISSING = object()
Lookup = Callable[[str], Any]  # what a name holds (before or after the cold run), MISSING where unbound
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (*_DEFS, ast.Lambda)
# statements that bind their names whenever they run (a loop or a branch may not run at all)
ALWAYS_BINDS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
                ast.AsyncFunctionDef, ast.ClassDef)
# Immutable values: augmented assignment on them rebinds the name, which the snapshot undoes.
IMMUTABLE = (int, float, complex, str, bytes, bool, tuple, frozenset, range, type(None))
ARRAY_TYPES = (("torch", "Tensor"), ("numpy", "ndarray"), ("numpy", "generic"), ("jax", "Array"),
               ("cupy", "ndarray"), ("tensorflow", "Tensor"), ("tensorflow", "Variable"))
IMMUTABLE_ARRAYS = (("jax", "Array"), ("tensorflow", "Tensor"))  # ``x += 1`` rebinds them
ARRAY_MODULES = frozenset({"numpy", "jaxlib"})  # array libraries besides the registry's frameworks
# Methods that change their object (lists, dicts, sets, deques, optimizers), whatever their value's use.
MUTATING = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "add", "discard", "setdefault",
    "sort", "reverse", "appendleft", "extendleft", "popleft", "rotate", "step", "send", "throw", "close", "put",
    "put_nowait", "get_nowait", "write", "writelines", "push", "apply", "register_hook", "register_buffer",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "add_module",
    "add_param_group", "load_state_dict", "seek", "truncate", "flush", "__next__", "intersection_update",
    "difference_update", "symmetric_difference_update", "write_text", "write_bytes", "touch", "unlink", "mkdir",
    "rename", "rmdir",
})
# Array methods that write into the array (besides torch's trailing "_") or write a file.
ARRAY_WRITES = frozenset({"put", "itemset", "setfield", "setflags", "resize", "partition", "tofile", "dump",
                          "assign", "assign_add", "assign_sub", "scatter_update", "scatter_add", "scatter_sub",
                          "register_hook"})
# Framework and standard functions that write into their arguments or a file.
FUNCTION_WRITES = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "shuffle", "save", "savez",
                             "savez_compressed", "savetxt", "tofile", "insort", "heappush", "heappop", "setitem",
                             "delitem", "iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imod", "imul", "imatmul",
                             "ior", "ipow", "irshift", "isub", "itruediv", "ixor"})
# Special methods that write into their object (``x.__iadd__(y)`` is ``x += y``), and those that do not.
WRITING_SPECIALS = frozenset({"__setitem__", "__delitem__", "__setattr__", "__delattr__"})
READING_SPECIALS = frozenset({"__init__", "__iter__", "__index__", "__int__", "__invert__", "__instancecheck__"})
# Idempotent, or meant for timing: repeating them leaves what one run leaves.
TIMING = frozenset({"backward", "zero_grad", "synchronize", "block_until_ready", "copy_", "fill_", "zero_",
                    "requires_grad_", "share_memory_", "retain_grad"})
WRITES_ITS_ARGUMENT = frozenset({"copy_", "fill_"})  # idempotent only when the value does not read the target
EFFECTFUL_BUILTINS = {
    "input": "input() reads from the user", "next": "next() advances an iterator",
    "anext": "anext() advances an iterator", "setattr": "setattr() changes an object",
    "delattr": "delattr() changes an object", "exec": "exec() runs code we cannot see",
    "eval": "eval() runs code we cannot see", "breakpoint": "breakpoint() stops in the debugger",
    "exit": "exit() ends the kernel", "quit": "quit() ends the kernel", "__import__": "__import__() imports",
}
# Modules whose functions act outside Python's objects (files, processes, the terminal, logs).
ACTING_MODULES = frozenset({"os", "posix", "nt", "subprocess", "shutil", "socket", "signal", "sys", "io", "_io",
                            "logging", "queue", "asyncio", "multiprocessing", "threading", "tempfile",
                            "webbrowser", "urllib", "http", "requests", "smtplib", "sqlite3", "ctypes", "atexit"})
READS_ONLY = frozenset({"getcwd", "listdir", "stat", "lstat", "getpid", "getppid", "cpu_count", "getenv", "fspath",
                        "get_terminal_size", "getsizeof", "getrefcount", "getrecursionlimit", "times", "uname",
                        "get", "keys", "values", "items", "copy", "fileno", "isatty", "readable", "writable",
                        "seekable", "isEnabledFor", "getEffectiveLevel", "qsize", "empty", "full", "getLogger"})
# Standard modules whose functions leave nothing behind (random's global state is put back).
PURE_MODULES = frozenset({"math", "cmath", "time", "itertools", "functools", "statistics", "random", "string",
                          "pprint", "gc", "copy", "textwrap", "re", "json", "numbers", "decimal", "fractions"})
OUTPUT = frozenset({"display", "clear_output", "print"})  # later runs' output is discarded
PURE_MAGICS = frozenset({"pwd", "who", "whos", "who_ls", "lsmagic", "pinfo", "pinfo2", "pdoc", "pdef", "psource",
                         "pfile", "magic"})
SHELL = frozenset({"system", "getoutput", "system_raw", "system_piped"})
CREATES = frozenset({"array", "tensor", "zeros", "ones", "empty", "full", "eye", "arange", "linspace", "rand",
                     "randn", "randint", "normal", "copy", "clone", "deepcopy", "stack", "concatenate", "cat",
                     "list", "dict", "set", "bytearray", "deque", "defaultdict", "OrderedDict", "Counter"})
FRESH_NODES = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.BinOp)


def top_level_names(tree: ast.AST) -> list[str]:
    """Names a cell binds or deletes at its top level (assignments, del, imports, defs, for/with targets)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _DEFS):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                names.add(child.id)
            elif isinstance(child, ast.alias) and child.name != "*":
                names.add((child.asname or child.name).partition(".")[0])
            elif not isinstance(child, (ast.Lambda, ast.comprehension)):
                visit(child)

    visit(tree)
    return sorted(names)


def executed_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a top-level statement that run with it (not the bodies of defs and lambdas)."""
    if isinstance(statement, _SCOPES):
        return
    yield from _walk([statement])


def _walk(pending: list[ast.AST]) -> Iterator[ast.AST]:
    """``pending`` and every node under them, without entering defs, lambdas or classes."""
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _SCOPES):
            pending.extend(ast.iter_child_nodes(node))


def _root(module_name: str | None) -> str:
    return (module_name or "").partition(".")[0]


def _loaded_types(pairs: Iterable[tuple[str, str]]) -> tuple[type, ...]:
    """The classes named by (module, attribute) pairs whose module is imported (nothing is imported here)."""
    found = []
    for module, name in pairs:
        value = getattr(sys.modules.get(module), name, None)
        if isinstance(value, type):
            found.append(value)
    return tuple(found)


def _is_global_generator(value: object) -> bool:
    """random's and NumPy's global generators, whose states the runs put back (``state.RandomStates``)."""
    mtrand = sys.modules.get("numpy.random.mtrand")
    return value is getattr(random, "_inst", None) or (mtrand is not None and value is getattr(mtrand, "_rand", None))


@dataclass
class Kinds:
    """How the rule sorts a value: its arrays, its frameworks (modules of the registry, NumPy)."""

    frameworks: frozenset[str]
    arrays: tuple[type, ...]
    immutable_arrays: tuple[type, ...]

    @classmethod
    def now(cls, frameworks: Iterable[str]) -> Kinds:
        return cls(frozenset(frameworks) | ARRAY_MODULES, _loaded_types(ARRAY_TYPES), _loaded_types(IMMUTABLE_ARRAYS))

    def owner(self, value: object) -> str:
        """"module:<root>", "array", "generator", "acts", "framework" or "object"."""
        if isinstance(value, types.ModuleType):
            return f"module:{_root(value.__name__)}"
        if isinstance(value, self.arrays):
            return "array"
        if not _is_global_generator(value) and (isinstance(value, random.Random)
                                                or type(value).__name__ in ("Generator", "RandomState")):
            return "generator"
        root = _root(type(value).__module__)
        if root in ACTING_MODULES or isinstance(value, io.IOBase):
            return "acts"
        return "framework" if root in self.frameworks else "object"

    def module_of(self, function: object) -> str:
        """The module root a function, class or builtin comes from ("" when it does not say)."""
        owner = getattr(function, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            return "" if not _is_global_generator(owner) else "random"
        return _root(getattr(function, "__module__", None) or type(function).__module__)

    def mutable(self, value: object) -> bool:
        """Whether ``x += ...`` on ``value`` changes it in place (unknown types: yes)."""
        return not isinstance(value, (*IMMUTABLE, Number, *self.immutable_arrays))


def _own_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes a statement runs itself: not its nested statements, nor the bodies of defs and lambdas."""
    if isinstance(statement, _SCOPES):
        return
    pending = [child for child in ast.iter_child_nodes(statement)
               if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))]
    pending += [handler.type for handler in getattr(statement, "handlers", ()) if handler.type is not None]
    pending += [case.guard for case in getattr(statement, "cases", ()) if case.guard is not None]
    yield from _walk(pending)


def _blocks(statement: ast.stmt) -> Iterator[tuple[list[ast.stmt], set[str]]]:
    """The statement lists nested in ``statement``, each with the names bound on entering it."""
    entry: set[str] = set()
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        entry = _stored_names(statement.target)
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        entry = set().union(*(_stored_names(item.optional_vars) for item in statement.items if item.optional_vars))
    if not isinstance(statement, _SCOPES):
        yield getattr(statement, "body", []), entry
    yield from ((getattr(statement, field, []), set()) for field in ("orelse", "finalbody"))
    yield from ((handler.body, {handler.name} - {None}) for handler in getattr(statement, "handlers", ()))
    yield from ((case.body, set()) for case in getattr(statement, "cases", ()))


_JUDGED = (ast.Call, ast.AugAssign, ast.Subscript, ast.Attribute)


def _bound_by(statement: ast.stmt, nodes: Iterable[ast.AST]) -> list[str]:
    """The names ``statement`` binds itself (``nodes``: its own), less an augmented assignment's target."""
    names = [handler.name for handler in getattr(statement, "handlers", ()) if handler.name]
    if isinstance(statement, _DEFS):
        names.append(statement.name)
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and not (
                isinstance(statement, ast.AugAssign) and node is statement.target):
            names.append(node.id)
        elif isinstance(node, ast.alias) and node.name != "*":
            names.append((node.asname or node.name).partition(".")[0])
    return names


def _stored_names(target: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _statements(block: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``block`` and of the blocks nested in it, in order."""
    for statement in block:
        yield statement
        for body, _ in _blocks(statement):
            yield from _statements(body)


def _read_names(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _whole(index: ast.expr) -> bool:
    """``[:]`` or ``[...]``: a store into every element, which repeats to the same result."""
    if isinstance(index, ast.Slice):
        return index.lower is None and index.upper is None and index.step is None
    return isinstance(index, ast.Constant) and index.value is Ellipsis


def _in_place(name: str) -> bool:
    """torch's naming of in-place methods (``add_``), less those that repeat to the same result,
    and the special methods that write (``__iadd__``, ``__setitem__``)."""
    if name.startswith("__") and name.endswith("__"):
        return name in WRITING_SPECIALS or (name.startswith("__i") and name not in READING_SPECIALS)
    return name.endswith("_") and not name.startswith("_") and name not in TIMING


def _fresh_value(node: ast.expr) -> bool:
    """Whether an assigned expression makes a new object (a display, a comprehension, arithmetic,
    ``list(...)``, ``torch.zeros(...)``, ``x.clone()``...), so that changing it changes nothing of the user's."""
    if isinstance(node, FRESH_NODES):
        return True
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name in CREATES or name.endswith("_like")


@dataclass(frozen=True)
class Where:
    """What is certain where a statement runs: the names the cell has bound on every path there."""

    bound: frozenset[str] = frozenset()

    def then(self, names: Iterable[str]) -> Where:
        return Where(self.bound | frozenset(names))

    def after(self, statement: ast.stmt, names: Iterable[str]) -> Where:
        """Past ``statement``, which binds ``names`` (they count when it binds whenever it runs)."""
        return self.then(names) if isinstance(statement, ALWAYS_BINDS) else self


class Judge:
    """Reads one cell after its cold run: ``before(name)`` and ``after(name)`` give what a name held
    before the cold run and holds after it (``MISSING``: unbound); ``value`` is the cold run's value."""

    def __init__(self, tree: ast.Module, before: Lookup, after: Lookup, kinds: Kinds, value: Any) -> None:
        self.tree, self.before, self.after, self.kinds = tree, before, after, kinds
        # id(statement) -> the nodes it runs itself; the names it binds
        self.nodes: dict[int, list[ast.AST]] = {}
        self.binds: dict[int, list[str]] = {}
        self.sites = self._binding_sites(tree)
        self.effects = self._effect_calls(tree, value)

    def _binding_sites(self, tree: ast.Module) -> dict[str, list[ast.stmt]]:
        """name -> the statements that bind it (augmented assignment keeps a value's kind: not one).
        Fills ``nodes`` and ``binds`` on the way: the cell's nodes are walked once."""
        sites: dict[str, list[ast.stmt]] = {}
        for statement in _statements(tree.body):
            nodes = self.nodes[id(statement)] = [statement, *_own_nodes(statement)]
            names = self.binds[id(statement)] = _bound_by(statement, nodes)
            for name in names:
                sites.setdefault(name, []).append(statement)
        return sites

    @staticmethod
    def _effect_calls(tree: ast.Module, value: Any) -> set[int]:
        """The calls made for their effect: statements whose value is discarded, and the final
        expression when the cold run's value was None."""
        last = tree.body[-1] if tree.body else None
        found: set[int] = set()
        for statement in _statements(tree.body):
            if isinstance(statement, ast.Expr) and (statement is not last or value is None):
                call = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
                found.add(id(call))
        return found

    def reasons(self) -> list[str]:
        """What makes the cell unsafe to repeat, as sentences (none: it may repeat)."""
        found: list[str] = []
        self._block(self.tree.body, Where(), found)
        return list(dict.fromkeys(found))

    def _block(self, block: list[ast.stmt], where: Where, found: list[str]) -> None:
        for statement in block:
            found += filter(None, (self._node(node, statement, where) for node in self.nodes[id(statement)]
                                   if isinstance(node, _JUDGED)))
            for body, entry in _blocks(statement):
                if body:
                    self._block(body, where.then(entry), found)
            where = where.after(statement, self.binds[id(statement)])

    def _node(self, node: ast.AST, statement: ast.stmt, where: Where) -> str | None:
        if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            return self._store(node, statement, where)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            return self._augmented(node.target.id, where)
        if isinstance(node, ast.Call):
            return self._acts(node, where) or (self._effect(node, where) if id(node) in self.effects else None)
        return None

    # What names and expressions hold

    def _builtin(self, name: str) -> bool:
        """Whether ``name`` is a builtin here (neither the cell nor the namespace binds it)."""
        return name not in self.sites and self.after(name) is MISSING and hasattr(builtins, name)

    def _name_values(self, name: str, where: Where) -> list[Any] | None:
        """What ``name`` may hold where ``where`` is, or None when that cannot be known: the value
        it holds now if the cell never binds it; if one statement binds it, the value it holds
        after the cold run, and the one from before unless that statement has surely run."""
        sites = self.sites.get(name)
        if not sites:
            value = self.after(name)
            value = getattr(builtins, name, MISSING) if value is MISSING else value
            return None if value is MISSING else [value]
        if len({id(site) for site in sites}) > 1:
            return None
        values = [self.after(name)] + ([] if name in where.bound else [self.before(name)])
        return [value for value in values if value is not MISSING] or None

    def _values(self, node: ast.expr, where: Where) -> list[Any] | None:
        """What a ``name.attr.attr`` chain may hold (see ``_name_values``), or None."""
        if isinstance(node, ast.Name):
            return self._name_values(node.id, where)
        if not isinstance(node, ast.Attribute):
            return None
        owners = self._values(node.value, where)
        found = [self._attribute(owner, node.attr) for owner in owners or ()]
        return None if owners is None or MISSING in found else found

    def _attribute(self, owner: Any, name: str) -> Any:
        """``owner.name`` read without running a property of the user's (modules and arrays: getattr)."""
        try:
            if isinstance(owner, (types.ModuleType, *self.kinds.arrays)):
                return getattr(owner, name)
            found = inspect.getattr_static(owner, name)
        except Exception:
            return MISSING
        return MISSING if hasattr(type(found), "__get__") else found

    def _fresh(self, name: str, where: Where) -> bool:
        """Whether ``name`` surely holds an object the cell made: every statement binding it assigns
        a new object (``d = {}``, ``out = torch.empty_like(x)``) and one of them has run."""
        sites = self.sites.get(name, [])
        return bool(sites) and name in where.bound and all(
            isinstance(site, ast.Assign) and _fresh_value(site.value)
            and any(isinstance(target, ast.Name) and target.id == name for target in site.targets)
            for site in sites)

    def _framework(self, value: Any) -> bool:
        kind = self.kinds.owner(value)
        return kind in ("array", "framework") or kind.removeprefix("module:") in self.kinds.frameworks

    def _array_expression(self, node: ast.expr, where: Where) -> bool:
        """Whether ``node`` surely gives an array or a framework's value: a framework's call, an
        array's method, arithmetic or indexing on one."""
        if isinstance(node, ast.BinOp):
            return self._array_expression(node.left, where) or self._array_expression(node.right, where)
        if isinstance(node, (ast.UnaryOp, ast.Subscript)):
            return self._array_expression(node.operand if isinstance(node, ast.UnaryOp) else node.value, where)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owners = self._values(node.func.value, where)
            if owners is None:
                return self._array_expression(node.func.value, where)
            return all(map(self._framework, owners))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            values = self._name_values(node.func.id, where)
            return values is not None and all(self.kinds.module_of(v) in self.kinds.frameworks for v in values)
        values = self._values(node, where)
        return values is not None and all(map(self._framework, values))

    # Judgments: a sentence when a node is unsafe to repeat, None when it is safe

    def _store(self, node: ast.Subscript | ast.Attribute, statement: ast.stmt, where: Where) -> str | None:
        """``d[k] = …``, ``obj.n = …``, ``del d[k]``, ``a[0] += …``: a change inside an object."""
        owner = node.value
        if isinstance(owner, ast.Name) and (self._fresh(owner.id, where) or _whole_store(node, owner.id, statement)):
            return None
        if isinstance(statement, ast.AugAssign) and node is statement.target:
            return f"augmented assignment to {ast.unparse(node)} changes an object in place"
        if isinstance(node.ctx, ast.Del):
            return f"del {ast.unparse(node)} changes {ast.unparse(owner)} in place"
        return f"{ast.unparse(node)} = … changes {ast.unparse(owner)} in place"

    def _augmented(self, name: str, where: Where) -> str | None:
        """``x += …`` changes x's object in place when it holds a mutable value (an alias's too)."""
        if self._fresh(name, where):
            return None
        values = self._name_values(name, where)
        if values is None:
            return f"augmented assignment to {name} may change an object in place"
        mutable = [value for value in values if self.kinds.mutable(value)]
        return f"augmented assignment to {name} changes a {type(mutable[0]).__name__} in place" if mutable else None

    def _acts(self, call: ast.Call, where: Where) -> str | None:
        """A call known to act, whatever becomes of its value."""
        func = call.func
        if any(keyword.arg == "out" for keyword in call.keywords):
            return f"{ast.unparse(func)}(…, out=…) writes into its out= argument"
        if isinstance(func, ast.Name):
            return self._function_acts(func.id, call, where)
        if not isinstance(func, ast.Attribute):
            return None
        if _is_shell(func.value):
            return _shell_reason(func.attr, call)
        owners = self._values(func.value, where)
        if owners is None:
            return self._unknown_owner_acts(func, call, where)
        return next(filter(None, (self._method_acts(func, owner, call, where) for owner in owners)), None)

    def _function_acts(self, name: str, call: ast.Call, where: Where) -> str | None:
        """``input()``, ``next(it)``, ``open(f, "w")``, ``print(…, file=f)``, ``system(…)`` from os."""
        values = [] if self._builtin(name) else self._name_values(name, where) or ()
        if self._builtin(name):
            return _builtin_acts(name, call)
        if any(map(_builtin_stand_in, values)):
            return _builtin_acts("open", call)
        for value in values:
            found = self._module_function_acts(self.kinds.module_of(value), getattr(value, "__name__", name), name)
            if found:
                return found
        return None

    @staticmethod
    def _module_function_acts(module: str, name: str, callee: str | ast.AST) -> str | None:
        """``callee``: the call's function, a name or a node (unparsed only for the sentence)."""
        if module in ACTING_MODULES and name not in READS_ONLY:
            return f"{_source(callee)}() acts outside Python's objects ({module})"
        if name in FUNCTION_WRITES or _in_place(name):
            return f"{_source(callee)}() writes into its arguments"
        return None

    def _method_acts(self, func: ast.Attribute, owner: Any, call: ast.Call, where: Where) -> str | None:
        """``x.append()``, ``t.add_()``, ``f.write()``, ``log.warning()``, ``rng.normal()``, ``opt.step()``."""
        name, kind = func.attr, self.kinds.owner(owner)
        if kind.startswith("module:"):
            return self._module_function_acts(kind.removeprefix("module:"), name, func)
        if isinstance(func.value, ast.Name) and self._fresh(func.value.id, where):
            return None
        if kind == "array":
            return self._array_method_acts(func, call)
        if kind == "generator":
            return f"{ast.unparse(func)}() advances the random generator {ast.unparse(func.value)}"
        if kind == "acts" and name not in READS_ONLY:
            return f"{ast.unparse(func)}() acts on {ast.unparse(func.value)}, a {type(owner).__name__}"
        return _changes(func) if name in MUTATING or _in_place(name) else None

    def _array_method_acts(self, func: ast.Attribute, call: ast.Call) -> str | None:
        name = func.attr
        if _in_place(name) or name in ARRAY_WRITES:
            return _changes(func)
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        if name in WRITES_ITS_ARGUMENT and _read_names(func.value) & set().union(*map(_read_names, arguments)):
            return f"{ast.unparse(func)}() writes {ast.unparse(func.value)} from its own value"
        return None

    def _unknown_owner_acts(self, func: ast.Attribute, call: ast.Call, where: Where) -> str | None:
        """A method of an object we cannot name (``hist['loss'].append``, ``f().add_()``)."""
        if self._array_expression(func.value, where):
            return self._array_method_acts(func, call)
        return _changes(func) if func.attr in MUTATING or _in_place(func.attr) else None

    def _effect(self, call: ast.Call, where: Where) -> str | None:
        """A call made for its effect repeats only when it is recognisably safe (see the module's doc)."""
        return None if self._repeatable(call.func, where) else f"{ast.unparse(call.func)}() is called for its effect"

    def _repeatable(self, func: ast.expr, where: Where) -> bool:
        if isinstance(func, ast.Name):
            values = None if self._builtin(func.id) else self._name_values(func.id, where)
            return self._builtin(func.id) or (values is not None and all(map(self._safe_function, values)))
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr in TIMING or (isinstance(func.value, ast.Name) and self._fresh(func.value.id, where)):
            return True
        owners = self._values(func.value, where)
        if owners is None:
            return self._array_expression(func.value, where)
        return all(self._safe_owner(owner, func.attr) for owner in owners)

    def _safe_function(self, value: Any) -> bool:
        module = self.kinds.module_of(value)
        return module in self.kinds.frameworks | PURE_MODULES | {"builtins"} or (
            module == "IPython" and getattr(value, "__name__", "") in OUTPUT)

    def _safe_owner(self, owner: Any, name: str) -> bool:
        kind = self.kinds.owner(owner)
        module = kind.removeprefix("module:")
        if module != kind:
            return module in self.kinds.frameworks | PURE_MODULES or (module == "IPython" and name in OUTPUT)
        return kind in ("array", "framework")


def _source(node: str | ast.AST) -> str:
    return node if isinstance(node, str) else ast.unparse(node)


def _changes(func: ast.Attribute) -> str:
    return f"{ast.unparse(func)}() changes {ast.unparse(func.value)} in place"


def _builtin_acts(name: str, call: ast.Call) -> str | None:
    if name == "open" and _opens_for_writing(call):
        return "open() for writing changes a file"
    if name == "print" and _prints_to_a_file(call):
        return "print(…, file=…) writes to a file"
    return EFFECTFUL_BUILTINS.get(name)


def _builtin_stand_in(value: Any) -> bool:
    """IPython's own ``open`` in the namespace (it refuses fds 0-2), read as the builtin it wraps."""
    return getattr(value, "__name__", None) == "open" and getattr(value, "__module__", None) in ("io", "_io")


def _whole_store(node: ast.Subscript | ast.Attribute, name: str, statement: ast.stmt) -> bool:
    """``out[:] = value`` (``name``: out) not reading ``out``: every run writes the same, as one run does."""
    return (isinstance(node, ast.Subscript) and _whole(node.slice) and isinstance(statement, ast.Assign)
            and node in statement.targets and name not in _read_names(statement.value))


def _is_shell(node: ast.expr) -> bool:
    """``get_ipython()``: what IPython turns ``!cmd`` and ``%magic`` into."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_ipython"


def _constant(call: ast.Call, index: int) -> str | None:
    argument = call.args[index] if len(call.args) > index else None
    return argument.value if isinstance(argument, ast.Constant) and isinstance(argument.value, str) else None


def _shell_reason(method: str, call: ast.Call) -> str | None:
    """``!cmd`` and ``x = !cmd`` run a shell command; a magic runs, unless it only reads."""
    if method in SHELL:
        return f"the shell command `{_constant(call, 0) or '…'}` can change files and the terminal"
    if method not in ("run_line_magic", "run_cell_magic"):
        return None
    name, line = _constant(call, 0), _constant(call, 1) or ""
    if name in PURE_MAGICS or (name == "env" and "=" not in line and len(line.split()) <= 1):
        return None
    return f"the magic %{name or '…'} may act outside the cell's names"


def _opens_for_writing(call: ast.Call) -> bool:
    """``open(f, "w" | "a" | "x" | "+")``; a mode we cannot read counts as writing."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return False
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or bool(set(mode.value) & set("wax+"))


def _prints_to_a_file(call: ast.Call) -> bool:
    file = next((keyword.value for keyword in call.keywords if keyword.arg == "file"), None)
    return file is not None and ast.unparse(file) not in ("sys.stdout", "sys.stderr")


def repeat_reasons(tree: ast.Module, before: Lookup, after: Lookup, frameworks: Iterable[str],
                   value: Any = None) -> list[str]:
    """Why the cell must not run again (no sentence: it may), read after its cold run (see ``Judge``)."""
    return Judge(tree, before, after, Kinds.now(frameworks), value).reasons()
