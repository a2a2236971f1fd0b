"""Many runs of a tiny cell per sample, as ``timeit`` does: the cell's code inlined in a loop.

A run of ``sum(range(40))`` takes about 300 ns. The harness's own cost per sample (two
clock reads, the synchronize, calling the compiled cell) is as large or larger, and
would be billed to every sample. ``timeit`` and torch's ``Timer`` compile the statement
into the body of ``for _ in itertools.repeat(None, k)``, time the loop and divide by k;
this does the same, so that a sample's fixed cost is spread over k runs.

The loop is a function whose body is the cell, with every name the cell binds declared
``global``: the runs read and write the user's namespace as an unbatched run does.
Only cells whose runs do not depend on each other are batched (``independent``):
between the runs of one sample nothing puts the cell's names back, as the runner does
between samples. Nor is a cell batched that cannot be a function body (``return``,
``yield``, ``await``, ``global``, ``nonlocal``, ``import *``, ``:=``), or that runs in a
function's local scope.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Callable, Iterator
from types import CodeType
from typing import Any, cast

# The loop's own names start with _cudatime_: the cell's ``_`` (IPython's last output) stays the user's.
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (*_DEFS, ast.Lambda)
_TEMPLATE = """
def _cudatime_batch(_cudatime_k, _cudatime_repeat):
    _cudatime_value = None
    for _cudatime_run in _cudatime_repeat(None, _cudatime_k):
        pass
    return _cudatime_value
"""
_NOT_IN_A_LOOP_FUNCTION = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)
# statements that bind their names whenever they run (a loop or a branch may not run at all)
_ALWAYS_BINDS = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                 ast.ClassDef)


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


def _reads(statement: ast.stmt) -> set[str]:
    """Names a statement reads (``x += 1`` reads x), nested scopes included: an over-estimate on purpose."""
    reads = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Load, ast.Del)):  # del needs the name
            reads.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            reads.add(node.target.id)
    return reads


def independent(tree: ast.Module) -> bool:
    """Whether each run does the same work whatever the run before it left: no statement reads a
    name the cell binds before a statement that always binds it has (``c = a @ b; c.sum()``
    yes; ``x = x + 1`` or ``for ...: z = ...`` then ``z`` no)."""
    bound = set(top_level_names(tree))
    done: set[str] = set()
    for statement in tree.body:
        if _reads(statement) & (bound - done):
            return False
        if isinstance(statement, _ALWAYS_BINDS):
            done |= set(top_level_names(ast.Module([statement], [])))
    return True


def _batchable(tree: ast.Module) -> bool:
    if not tree.body or not independent(tree):
        return False
    if any(isinstance(node, ast.NamedExpr) for node in ast.walk(tree)):
        return False
    return not any(isinstance(node, _NOT_IN_A_LOOP_FUNCTION) for statement in tree.body
                   for node in executed_nodes(statement))


def _loop_module(tree: ast.Module) -> ast.Module:
    """``_TEMPLATE`` with the cell as the loop's body and its bound names declared global; the
    template's lines are put on the cell's first line, so a traceback shows the cell's lines only."""
    module = ast.parse(_TEMPLATE)
    body = list(tree.body)
    for node in ast.walk(module):
        if hasattr(node, "lineno"):
            ast.copy_location(node, body[0])
    function = cast(ast.FunctionDef, module.body[0])  # the template's def, whose body[1] is its for loop
    if isinstance(body[-1], ast.Expr):  # the final expression's value is the batch's value
        body[-1] = ast.copy_location(ast.Assign([ast.Name("_cudatime_value", ast.Store())], body[-1].value),
                                     body[-1])
    cast(ast.For, function.body[1]).body = body
    names = top_level_names(tree)
    if names:
        function.body.insert(0, ast.Global(names))
    return ast.fix_missing_locations(module)


def compile_batch(tree: ast.Module, compile_module: Callable[[ast.Module], CodeType],
                  namespace: dict[str, Any]) -> Callable[[int], Any] | None:
    """``batch(k)``: run the cell ``k`` times in ``namespace`` (the user's globals) and return the
    last run's value; or None when the cell is not batched. ``tree`` is the cell's transformed
    module AST, ``compile_module(module)`` compiles a module AST as the shell does."""
    if not _batchable(tree):
        return None
    try:
        code = compile_module(_loop_module(tree))
    except SyntaxError:  # e.g. ``from m import *``, which a function body may not hold
        return None
    scratch: dict[str, Any] = {}
    exec(code, namespace, scratch)  # defines the function, whose globals are the user's namespace
    loop = scratch["_cudatime_batch"]
    loop.__code__ = _as_module_code(loop.__code__)
    return lambda k: loop(k, itertools.repeat)


def _as_module_code(code: CodeType) -> CodeType:
    """The loop's code named ``<module>``, as a cell's own code is: an error in a batched run is
    shown as in one run, with no frame of this package's function."""
    if sys.version_info >= (3, 11):
        return code.replace(co_name="<module>", co_qualname="<module>")
    return code.replace(co_name="<module>")
