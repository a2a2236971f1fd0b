"""The IPython layer: parse the options, compile the cell once, run it, show the result.

Compiling follows IPython's own ``%time``/``%timeit`` (transform_cell → ast_parse →
transform_ast → compile), so ``%magics``, ``!cmd`` and AST transformers work in the
cell; the code then runs in the user namespace. ``shell.run_cell`` is never
called: it would reset the outer cell's result.
"""

import ast
import io
import sys
import tokenize

from IPython.core.error import UsageError
from IPython.core.magic import (
    Magics,
    line_cell_magic,
    magics_class,
    needs_local_scope,
    no_var_expand,
)
from IPython.utils.capture import capture_output

from . import options as cli
from .backends import DeviceSet
from .display import show
from .explain import ColdWatch
from .runner import Plan, measure

PACKAGE = __name__.rpartition(".")[0]

OOM_HINT = (
    "Out of memory during the warm runs: each run allocates again while the previous result "
    "is still referenced. Time fewer runs (-n), free tensors with del, or make the cell "
    "overwrite its result in place."
)


def _ends_with_semicolon(source):
    """Whether the last code token is ';' (IPython's rule for hiding a cell's value)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source.rstrip().endswith(";")
    skip = (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
    for token in reversed(tokens):
        if token.type not in skip:
            return token.type == tokenize.OP and token.string == ";"
    return False


def _user_traceback(tb):
    """The traceback from the user's first frame on, without this package's frames."""
    start = tb
    while start is not None and start.tb_frame.f_globals.get("__name__", "").startswith(PACKAGE):
        start = start.tb_next
    return start or tb


def _is_out_of_memory(exc):
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _bound_names(tree):
    """Names a cell binds at its top level (assignments, imports, defs, for/with targets)."""
    names = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, ast.alias):
                names.add((child.asname or child.name).partition(".")[0])
            elif not isinstance(child, (ast.Lambda, ast.comprehension)):
                visit(child)

    visit(tree)
    return sorted(names)


class CompiledCell:
    """A cell compiled once: its statements, its final expression if it has one, the names it binds."""

    def __init__(self, shell, source):
        transformed = shell.transform_cell(source)
        filename = shell.compile.cache(transformed, shell.execution_count)
        tree = shell.transform_ast(shell.compile.ast_parse(transformed, filename=filename))
        self.bound = _bound_names(tree)
        body = tree.body
        last = None
        if body and isinstance(body[-1], ast.Expr):
            last = ast.Expression(body.pop().value)
        self.statements = shell.compile(ast.Module(body, []), filename, "exec") if body else None
        self.expression = shell.compile(last, filename, "eval") if last is not None else None

    def runner(self, globals_, locals_):
        """A no-argument callable that runs the cell once and returns its final value."""
        statements, expression = self.statements, self.expression

        def run():
            if statements is not None:
                exec(statements, globals_, locals_)
            if expression is not None:
                return eval(expression, globals_, locals_)
            return None

        return run

    def outputs(self, namespace):
        """What a run produced: its value and the values of the names it bound (JAX waits on these)."""
        bound = self.bound

        def produced(value):
            return [value, *(namespace[name] for name in bound if name in namespace)]

        return produced


@magics_class
class CudaTimeMagics(Magics):
    @no_var_expand
    @needs_local_scope
    @line_cell_magic
    def cudatime(self, line="", cell=None, local_ns=None):
        __tracebackhide__ = True  # IPython ≥ 8 leaves this frame out of the user's traceback
        try:
            opts, rest = cli.parse(line)
        except cli.OptionError as exc:
            raise UsageError(f"{exc}\n\n{cli.USAGE}") from None
        if cell is None:
            setup, source, where = None, rest, local_ns
        else:
            setup, source, where = rest, cell, None
        if not source.strip():
            raise UsageError(f"nothing to time: the {'cell' if cell is not None else 'statement'} is empty\n\n{cli.USAGE}")

        shell = self.shell
        namespace = shell.user_ns
        compiled = CompiledCell(shell, source)
        if setup:
            if not self._run_user_code(CompiledCell(shell, setup).runner(namespace, where)):
                return None
        plan = Plan(runs=opts.runs, warmup=opts.warmup, budget=opts.budget, profile=opts.profile)
        profiler = self._profiler() if opts.profile else None
        try:
            measurement = measure(compiled.runner(namespace, where), DeviceSet.detect(), plan,
                                  quiet=capture_output, watch=ColdWatch.detect(), profiler=profiler,
                                  outputs=compiled.outputs(namespace if where is None else where))
        except Exception:
            shell.showtraceback(self._user_exc_info(), tb_offset=0)
            return None

        result, error = measurement.result, measurement.error
        if error is not None and _is_out_of_memory(error):
            result.notes.append(OOM_HINT)
        if opts.var:
            namespace[opts.var] = result
        if error is not None:
            if not opts.quiet:
                show(result, shell, opts.text)
            raise error.with_traceback(_user_traceback(error.__traceback__))
        if opts.output:
            return result
        if not opts.quiet:
            show(result, shell, opts.text)
        if _ends_with_semicolon(source):
            return None
        return measurement.value

    cudatime.__doc__ = cli.USAGE

    @staticmethod
    def _profiler():
        torch = sys.modules.get("torch")
        if torch is None:
            raise UsageError(f"--profile uses torch.profiler: import torch first\n\n{cli.USAGE}")
        from .explain.profile import TorchProfiler

        return TorchProfiler(torch)

    def _run_user_code(self, run):
        """Run setup code once; show the user's traceback and return False if it fails."""
        try:
            run()
        except Exception:
            self.shell.showtraceback(self._user_exc_info(), tb_offset=0)
            return False
        return True

    @staticmethod
    def _user_exc_info():
        etype, value, tb = sys.exc_info()
        return etype, value, _user_traceback(tb)
