"""The IPython layer: parse the options, compile the cell once, run it, show the result.

Compiling follows IPython's own ``%time``/``%timeit`` (transform_cell → ast_parse →
transform_ast → compile), so ``%magics``, ``!cmd`` and AST transformers work in the
cell; the code then runs in the user namespace. ``shell.run_cell`` is never
called: it would reset the outer cell's result.
"""

import ast
import functools
import io
import os
import sys
import tokenize

from IPython.core.error import UsageError
from IPython.core.magic import (
    Magics,
    line_cell_magic,
    line_magic,
    magics_class,
    needs_local_scope,
    no_var_expand,
)
from IPython.utils.capture import capture_output

from . import options as cli
from .auto import AutoTimer
from .backends import DeviceSet
from .compare import Comparison, check_values, grid, run_sweep
from .display import publish, show
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


def _point_label(params):
    return ",".join(f"{name}={value}" for name, value in params.items())


@magics_class
class CudaTimeMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self.history = {}  # label -> CudaTimeResult, in the order recorded (-l)
        self.auto = AutoTimer(shell)

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
        run_setup = CompiledCell(shell, setup).runner(namespace, where) if setup else None
        if run_setup is not None and not opts.sweeps and not self._run_user_code(run_setup):
            return None
        plan = Plan(runs=opts.runs, warmup=opts.warmup, budget=opts.budget, profile=opts.profile)
        profiler = self._profiler(opts.trace) if opts.profile else None
        new_counter = self._counters(opts.peak) if opts.roofline or opts.peak is not None else None
        scope = namespace if where is None else where

        def time_once():
            return measure(compiled.runner(namespace, where), DeviceSet.detect(), plan,
                           quiet=capture_output, watch=ColdWatch.detect(), profiler=profiler,
                           outputs=compiled.outputs(scope), counter=new_counter and new_counter())

        if opts.sweeps:
            return self._sweep(opts, scope, time_once, run_setup)
        try:
            measurement = time_once()
        except Exception:
            shell.showtraceback(self._user_exc_info(), tb_offset=0)
            return None

        result, error = measurement.result, measurement.error
        if error is not None and _is_out_of_memory(error):
            result.notes.append(OOM_HINT)
        self._keep(opts, result)
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

    def _keep(self, opts, result):
        """-v stores the result in the namespace; -l records it for %cudatime_compare."""
        if opts.var:
            self.shell.user_ns[opts.var] = result
        if opts.label:
            self.history[opts.label] = result

    def _sweep(self, opts, scope, time_once, run_setup):
        """Time the cell at every point of the --sweep grid; -o returns the SweepResult.

        The swept names are bound first, then the setup code runs (untimed), so that setup
        can prepare each point's inputs.
        """

        def time_point(params):
            scope.update(params)
            if run_setup is not None:
                run_setup()
            measurement = time_once()
            if measurement.error is not None:
                raise measurement.error
            return measurement.result, measurement.value

        sweep, values = run_sweep(grid(opts.sweeps), time_point, opts.stop_on_error)
        if opts.check:
            check_values(sweep, values)
        if opts.var:
            self.shell.user_ns[opts.var] = sweep
        if opts.label:  # each point is recorded: "LABEL[n=256,device=cpu]"
            for point in sweep.points:
                if point.result is not None:
                    self.history[f"{opts.label}[{_point_label(point.params)}]"] = point.result
        if not opts.quiet and (sweep.interrupted or not opts.output):
            publish(sweep, self.shell, opts.text)
        if sweep.interrupted:
            raise KeyboardInterrupt
        return sweep if opts.output else None

    cudatime.__doc__ = cli.USAGE

    @line_magic
    def cudatime_compare(self, line=""):
        """Show results recorded with -l side by side: %cudatime_compare [labels...] | --clear"""
        words = line.split()
        if words == ["--clear"]:
            self.history.clear()
            return None
        unknown = [word for word in words if word not in self.history]
        if unknown:
            raise UsageError(f"no result recorded as {', '.join(unknown)} (record one with %cudatime -l NAME); "
                             f"recorded: {', '.join(self.history) or 'none'}")
        chosen = {label: self.history[label] for label in (words or self.history)}
        if not chosen:
            raise UsageError("nothing recorded yet: time cells with %cudatime -l NAME first")
        publish(Comparison(chosen), self.shell)
        return None

    @line_magic
    def cudatime_auto(self, line=""):
        """Time every following cell once, synchronized: %cudatime_auto on|off"""
        choice = line.strip().lower()
        if choice not in ("on", "off"):
            raise UsageError("usage: %cudatime_auto on|off")
        self.auto.enable(choice == "on")

    @staticmethod
    def _profiler(trace):
        """torch.profiler around one run; ``trace``: where --trace keeps its Chrome trace."""
        torch = sys.modules.get("torch")
        if torch is None:
            raise UsageError(f"--profile uses torch.profiler: import torch first\n\n{cli.USAGE}")
        if trace is not None:
            trace = os.path.abspath(os.path.expanduser(trace))
            if not os.path.isdir(os.path.dirname(trace)):
                raise UsageError(f"--trace {trace}: no such folder to write it in")
        from .explain.profile import TorchProfiler

        return TorchProfiler(torch, trace)

    @staticmethod
    def _counters(peak):
        """--roofline: a maker of op counters, one per timed cell or sweep point."""
        if sys.modules.get("torch") is None:
            raise UsageError(f"--roofline counts PyTorch ops: import torch first (NumPy, CuPy and JAX work is "
                             f"not counted)\n\n{cli.USAGE}")
        from .explain.op_counter import OpCounter

        return functools.partial(OpCounter, peak)

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
