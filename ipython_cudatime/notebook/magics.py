"""The IPython layer: parse the options, compile the cell once, run it, show the result.

Compiling follows IPython's own ``%time``/``%timeit`` (transform_cell → ast_parse → transform_ast → compile),
so ``%magics``, ``!cmd`` and AST transformers work in the cell; the code then runs in the user namespace.
``shell.run_cell`` is never called: it would reset the outer cell's result.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import shlex
import sys
import tokenize
import traceback
from collections.abc import Callable, Collection, Iterable, Mapping
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any, cast

from IPython.core.error import UsageError
from IPython.core.magic import (
    Magics,
    line_cell_magic,
    line_magic,
    magics_class,
    needs_local_scope,
    no_var_expand,
)

from ..backends import REGISTRY, DeviceSet, object_kinds
from ..command import options as cli
from ..command.options import HELP, grid, grid_size
from ..features import FEATURES, Call, Unavailable
from ..features.cold_causes.probes import PROBES, ProbeSet
from ..measure.machine import Clock, Machine
from ..measure.runner import SIZED, Cell, Unmade, Watch, compile_batch, measure, top_level_names
from ..repeat.state import CellCode, CellRepeats, InterruptHold, NameSnapshot
from ..results import store
from ..results.compare import Point, Results, check_values, run_interleaved, run_sweep
from ..results.result import CudaTimeResult, Env, Task, format_params
from .auto import AutoTimer
from .display import Display, live_progress

if TYPE_CHECKING:
    from ..backends import Entry
    from ..command.options import Spec
    from ..features import Feature
    from ..features.cold_causes.probes import Probe
    from ..measure.runner import Measurement
    from .display import LiveProgress

PACKAGE = __name__.partition(".")[0]


def _ends_with_semicolon(source: str) -> bool:
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


def _render_as_users(shell: Any, error: BaseException, tb: TracebackType | None) -> None:
    """Make IPython 7 (which would show its magic machinery's frames) as 9 show ``error`` with the user's frames
    only: IPython renders an exception through its ``_render_traceback_``, in a terminal and in a kernel."""
    with contextlib.suppress(Exception):  # __slots__, a raising __setattr__ or __str__: IPython's own view
        rendered: list[str]
        if tb is None:  # no frame of the user's (an interrupt held while the report was shown): the line alone
            rendered = [line.rstrip("\n") for line in traceback.format_exception_only(type(error), error)]
        else:
            rendered = shell.InteractiveTB.structured_traceback(type(error), error, tb, tb_offset=0)
        error._render_traceback_ = lambda: rendered  # type: ignore[attr-defined]  # IPython's hook, on the instance


def _show_syntax_error_plainly(shell: Any, error: SyntaxError) -> None:
    """IPython shows a SyntaxError raised while code runs with every frame above it (its own, this magic's): one
    in the cell's text is shown as in a cell, with none, the shell's ``showsyntaxerror`` wrapped for that call."""
    original = shell.showsyntaxerror

    def show(filename: str | None = None, running_compiled_code: bool = False) -> None:
        if sys.exc_info()[1] is error:
            running_compiled_code = False
            with contextlib.suppress(AttributeError):
                del shell.showsyntaxerror  # the class's method again
        original(filename, running_compiled_code)

    shell.showsyntaxerror = show


def _cell_number(shell: Any) -> int:
    """The number of the cell being run, for ``Cell In[N]`` in tracebacks: IPython 9 increments ``execution_count``
    before the cell runs, IPython 7 after; the running cell's ExecutionResult knows its own number in both."""
    running = getattr(shell.displayhook, "exec_result", None)
    number = getattr(running, "execution_count", None)
    return int(shell.execution_count if number is None else number)


class CompiledCell:
    """A cell compiled once: its statements, its final expression if it has one, the names it binds."""

    def __init__(self, shell: Any, source: str) -> None:
        self.source = source
        transformed = shell.transform_cell(source)
        filename = shell.compile.cache(transformed, _cell_number(shell))
        tree: ast.Module = shell.transform_ast(shell.compile.ast_parse(transformed, filename=filename))
        self.tree, self.filename = tree, filename
        self._compile_module: Callable[[ast.Module], CodeType] = lambda module: shell.compile(module, filename, "exec")
        self.bound = top_level_names(tree)
        self.read = sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                            and isinstance(node.ctx, ast.Load)})
        body = list(tree.body)
        last: ast.Expression | None = None
        if body and isinstance(body[-1], ast.Expr):
            last = ast.Expression(cast(ast.Expr, body.pop()).value)
        self.statements: CodeType | None = shell.compile(ast.Module(body, []), filename, "exec") if body else None
        self.expression: CodeType | None = shell.compile(last, filename, "eval") if last is not None else None
        self._batch: tuple[dict[str, Any], Callable[[int], Any] | None] | None = None  # (namespace, its loop)

    def code(self) -> CellCode:
        """What the repeat decision reads of it (``state.CellCode``)."""
        nodes = list(ast.walk(self.tree))
        used = sorted({node.id for node in nodes if isinstance(node, ast.Name)})
        attributes = sorted({node.attr for node in nodes if isinstance(node, ast.Attribute)})
        return CellCode(self.tree, self.bound, used, attributes, self.filename)

    def cell(self, globals_: dict[str, Any], locals_: Mapping[str, Any] | None,
             *namespaces: Mapping[str, Any]) -> Cell:
        """What the runner times (``runner.Cell``): the cell run in ``globals_``/``locals_``, what it
        produced in ``namespaces[0]``, and the names it reads, looked up in ``namespaces``."""
        bound, read, namespace = self.bound, self.read, namespaces[0]

        def produced(value: Any) -> list[Any]:
            """What a run produced: its value and the values of the names it bound (JAX waits on these)."""
            return [value, *(namespace[name] for name in bound if name in namespace)]

        def values() -> list[Any]:  # they tell which frameworks the cell's work went through
            spaces = ((name, next((space for space in namespaces if name in space), None)) for name in read)
            return [space[name] for name, space in spaces if space is not None]

        return Cell(self.runner(globals_, locals_), produced, values, self.batch(globals_, locals_))

    def runner(self, globals_: dict[str, Any], locals_: Mapping[str, Any] | None) -> Callable[[], Any]:
        """A no-argument callable that runs the cell once and returns its final value."""
        statements, expression = self.statements, self.expression

        def run() -> Any:
            if statements is not None:
                exec(statements, globals_, locals_)
            return None if expression is None else eval(expression, globals_, locals_)

        return run

    def batch(self, globals_: dict[str, Any], locals_: Mapping[str, Any] | None) -> Callable[[int], Any] | None:
        """``batch(k)`` running the cell k times in one call (see ``batching``), or None where it cannot be
        batched (in a function's own local scope). Compiled once per namespace, as the cell is: every round of an
        interleaved sweep then runs code Python 3.11+ has already specialized, where a loop compiled afresh each
        round made its one sample pay the warm-up (a 300 ns cell read up to 40% slower, its interval far wider)."""
        if locals_ is not None and locals_ is not globals_:
            return None
        if self._batch is None or self._batch[0] is not globals_:
            self._batch = (globals_, compile_batch(self.tree, self._compile_module, globals_))
        return self._batch[1]


def _round(spec: Spec[Feature], first: CudaTimeResult | None) -> Spec[Feature]:
    """One point's timing in one round of an interleaved sweep: one warm sample. The first round (``first`` is
    None) makes the warm-up and sizes the sample from it as an ordinary call's runs are (a µs-scale cell's is a
    batch, so that the harness's cost is not read as the cell's), watched by the features; each later round makes
    a sample of that size, watched by the features that add up every round's record (``Feature.every_round``)."""
    if not spec.interleave:
        return spec
    if first is None:
        return dataclasses.replace(spec, plan=dataclasses.replace(spec.plan, runs=1, batch=SIZED))
    plan = dataclasses.replace(spec.plan, runs=1, warmup=0, batch=first.batch)
    every_round = tuple((feature, settings) for feature, settings in spec.features if feature.every_round)
    return dataclasses.replace(spec, plan=plan, features=every_round)


def _compare_arguments(words: list[str]) -> tuple[list[str], list[str]]:
    """%cudatime_compare's words as (labels, files): the files are all words after --load."""
    if "--load" not in words:
        return words, []
    at = words.index("--load")
    files = words[at + 1:]
    if not files or any(word.startswith("--") for word in files):
        raise UsageError("--load expects one or more files: %cudatime_compare [labels...] --load FILE [FILE...]")
    if bad := [file for file in files if "\0" in file]:  # open() would raise ValueError
        raise UsageError(f"--load expects file names without a NUL byte, got {bad[0]!r}")
    return words[:at], files


@magics_class
class CudaTimeMagics(Magics):
    """The magics and what they keep between cells. The seams are passed in, with defaults (tests register their
    own): the device backends, the cold-run probes, the clock, ``notebook`` (see ``Display``), the ``machine``
    where the CPU facts are read and threads set, and the ``features``, whose flags the command line takes."""

    shell: Any  # the InteractiveShell they are registered on (Magics allows None; these magics always have one)

    def __init__(self, shell: Any, registry: Collection[Entry] = REGISTRY,
                 probes: Collection[tuple[str, type[Probe[Any]]]] = PROBES, clock: Clock | None = None,
                 notebook: bool | None = None, machine: Machine | None = None,
                 features: Iterable[Feature] = FEATURES) -> None:
        super().__init__(shell)
        self.registry = registry
        self.features = tuple(features)
        CudaTimeResult.check_keepers(self.features)  # a feature named `median` would shadow r.median
        self.probes = ProbeSet(probes)
        self.clock = clock or Clock()
        self.machine = machine or Machine(registry=registry)
        self.display = Display(shell, self.features, notebook)
        self.history = Results(keepers=self.features)  # what -l recorded, in order: %cudatime_compare's live rows
        self.auto = AutoTimer(shell, registry, self.clock, self.display)

    @no_var_expand
    @needs_local_scope
    @line_cell_magic
    def cudatime(self, line: str = "", cell: str | None = None, local_ns: dict[str, Any] | None = None) -> Any:
        __tracebackhide__ = True  # IPython leaves this frame out of the user's traceback
        try:
            spec, rest = cli.parse(line, self.features)
        except cli.OptionError as exc:
            raise UsageError(f"{exc}; {HELP}") from None
        setup, source, where = (None, rest, local_ns) if cell is None else (rest, cell, None)
        if not source.strip():
            raise UsageError(f"nothing to time: the {'cell' if cell is not None else 'statement'} is empty; {HELP}")
        try:
            compiled = CompiledCell(self.shell, source)
            run_setup = CompiledCell(self.shell, setup).runner(self.shell.user_ns, where) if setup else None
        except SyntaxError as exc:  # the user's, shown as IPython shows one in a cell
            _show_syntax_error_plainly(self.shell, exc)
            raise exc.with_traceback(None)  # noqa: B904  # the user's error itself, raised again: no new one to chain
        points, plan = grid_size(spec.sweeps), spec.plan
        if spec.interleave:  # each point is timed once per round, one warm sample each time
            points, plan = points * (plan.runs or 1), dataclasses.replace(plan, runs=1)
        with live_progress(self.shell, spec.quiet, plan, self.display.notebook, points, self.clock) as live:
            if spec.sweeps:
                value, error = self._sweep(spec, compiled, where, run_setup, live)
            else:
                value, error = self._time(spec, compiled, where, run_setup, live)
                value = None if _ends_with_semicolon(source) and not spec.output else value
        if error is None:
            return value
        if isinstance(error, UsageError):  # a bad command line is never the cell's error: it always stops
            raise error.with_traceback(None)
        tb = error.__traceback__  # from the user's first frame on, without this package's (None if all are ours)
        while tb is not None and tb.tb_frame.f_globals.get("__name__", "").startswith(PACKAGE):
            tb = tb.tb_next
        if spec.raise_error or not isinstance(error, Exception):
            _render_as_users(self.shell, error, tb)
            raise error.with_traceback(tb)  # the user's error: error_in_exec, Run All stops
        self.shell.showtraceback((type(error), error, tb or error.__traceback__), tb_offset=0)
        return None

    def _measure(self, spec: Spec[Feature], compiled: CompiledCell, where: dict[str, Any] | None, live: LiveProgress,
                 params: Mapping[str, Any] | None = None, hold: InterruptHold | None = None) -> Measurement:
        """Time the cell once (cold, warm-up, warm runs), its names restored before every later run, watched by
        ``spec``'s features; ``live`` hears of each run, ``hold`` starts when the later runs end."""
        shell = self.shell
        scope = shell.user_ns if where is None else where
        frameworks = {module.partition(".")[0] for module, _ in self.registry}
        repeats = CellRepeats(shell, scope, compiled.code(), frameworks, object_kinds(self.registry),
                              forced=spec.plan.runs is not None, hold=hold, bind=not spec.timeit)
        watches = self._watches(spec, Call(compiled.source, self.probes, self.machine, self.clock))
        task = Task(compiled.source, spec.label, dict(params or {}), threads=spec.threads, clock=spec.clock)
        with self.machine.limit(spec.threads):  # --threads N, the user's settings back afterwards
            return measure(compiled.cell(shell.user_ns, where, scope, shell.user_ns), DeviceSet.detect(self.registry),
                           spec.plan, task, self.features, watches, repeats=repeats, clock=self.clock, progress=live)

    @staticmethod
    def _watches(spec: Spec[Feature], call: Call) -> dict[str, Watch]:
        """Each chosen feature's part in this measurement, by its name: one that cannot run here says why in a
        UsageError; one whose watch failed otherwise (a framework version it does not know) is a line in the report."""
        watches = {}
        for feature, settings in spec.features:
            try:
                watches[feature.name] = feature.watch(settings, call)
            except Unavailable as exc:
                raise UsageError(f"{exc}; {HELP}") from None
            except Exception as error:
                watches[feature.name] = Unmade(error)
        return {name: watch for name, watch in watches.items() if watch is not None}

    def _time(self, spec: Spec[Feature], compiled: CompiledCell, where: dict[str, Any] | None,
              run_setup: Callable[[], Any] | None, live: LiveProgress) -> tuple[Any, BaseException | None]:
        """Setup, the runs, the result kept, saved and shown; (value, error): the report is shown before an error
        is raised, and a Ctrl-C once the later runs are over waits for it to be shown and saved."""
        with InterruptHold() as hold:
            try:
                if run_setup is not None:
                    run_setup()
                measurement = self._measure(spec, compiled, where, live, hold=hold)
            except BaseException as exc:  # setup or the cold run failed: nothing to report
                return None, exc
            result, error = measurement.result, measurement.error
            assert result.task is not None  # measure() gives its result the task it timed
            point = Point(result.task, result)
            self._keep(spec, [point], point)
            self._show(spec, result, live)
        value = result if spec.output else None if spec.timeit else measurement.value
        return value, KeyboardInterrupt() if hold.caught and error is None else error

    def _keep(self, spec: Spec[Feature], points: list[Point], point: Point) -> None:
        """-l records the ``points`` of this call (those timed so far) for %cudatime_compare, in place
        of what was recorded under the label before; --save appends the ``point`` just timed to its file."""
        if spec.label:
            self.history.record([done for done in points if done.result is not None])
        if spec.save:
            try:
                store.save([point], spec.save)
            except OSError as exc:  # the timing is done: say so, and still show the report
                print(f"cudatime: --save {spec.save}: not saved ({exc})", file=sys.stderr)

    def _show(self, spec: Spec[Feature], obj: CudaTimeResult | Results, live: LiveProgress) -> None:
        """-o VAR binds what was timed; unless -q, its report replaces the progress view."""
        if spec.var:
            self.shell.user_ns[spec.var] = obj
        if not spec.quiet:
            self.display.show(obj, spec.text, live)

    def _sweep(self, spec: Spec[Feature], compiled: CompiledCell, where: dict[str, Any] | None,
               run_setup: Callable[[], Any] | None, live: LiveProgress) -> tuple[Results | None, BaseException | None]:
        """Time the cell at every point of the --sweep grid: (Results or None, error). Before each point the cell's
        names are put back, the swept names bound, then the setup runs (untimed), so that it can prepare the point's
        inputs; the swept names get their old values back after (``run_interleaved``: once per round)."""
        scope = self.shell.user_ns if where is None else where
        swept = NameSnapshot(scope, [name for name, _ in spec.sweeps])
        cell_state = NameSnapshot(scope, compiled.bound)

        def time_point(params: dict[str, Any], first: CudaTimeResult | None = None) -> tuple[CudaTimeResult, Any]:
            live.next_point(format_params(params))
            cell_state.restore()
            scope.update(params)
            if run_setup is not None:
                run_setup()
            measurement = self._measure(_round(spec, first), compiled, where, live, params)
            if measurement.error is not None:
                raise measurement.error
            return measurement.result, measurement.value

        done: list[Point] = []

        def finished(point: Point) -> None:  # recorded, saved and listed as it finishes: LABEL[n=256, device='cpu']
            live.point_done(format_params(point.params), point.result.median if point.result else None,
                            point.result is None)
            done.append(point)
            self._keep(spec, done, point)

        failed = Task(compiled.source, spec.label, env=Env.here("not timed"),  # a failed point
                      threads=spec.threads, clock=spec.clock)
        with InterruptHold() as hold:
            try:
                if spec.interleave:
                    sweep, values = run_interleaved(grid(spec.sweeps), time_point, spec.plan.runs or 1,
                                                    spec.stop_on_error, failed, finished, self.features)
                else:
                    start = self.clock.now()
                    sweep, values = run_sweep(grid(spec.sweeps), time_point, spec.stop_on_error, failed, finished)
                    sweep.span = self.clock.now() - start
            finally:
                swept.restore()
            sweep.keepers = self.features  # its table columns and to_pandas's fields
            hold.start()  # from here a Ctrl-C waits for the report of the points done
            if spec.check:
                check_values(sweep, values)
            self._show(spec, sweep, live)
        error = KeyboardInterrupt() if hold.caught and sweep.error is None else sweep.error
        return (sweep if spec.output else None), error

    cudatime.__doc__ = cli.usage(FEATURES)

    @line_magic
    def cudatime_compare(self, line: str = "") -> None:
        """Show results side by side, recorded with -l or saved with --save:
        %cudatime_compare [labels...] [--load FILE [FILE...]] | --clear"""
        with InterruptHold() as hold:
            try:
                self._compare(line, hold)
            except KeyboardInterrupt:  # while the files loaded: nothing to show
                hold.caught = True
        if hold.caught:  # no code of the user's ran: the interrupt is one line, without our frames
            interrupt = KeyboardInterrupt()
            _render_as_users(self.shell, interrupt, None)
            raise interrupt

    def _compare(self, line: str, hold: InterruptHold) -> None:
        """%cudatime_compare's work; ``hold`` starts once the table is assembled from what loaded."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%cudatime_compare: {exc}") from None
        if words == ["--clear"]:
            self.history = Results(keepers=self.features)
            return
        labels, files = _compare_arguments(words)
        chosen, unknown = self.history.select(labels) if labels else (self.history, [])
        if unknown:
            recorded = ", ".join(dict.fromkeys(p.label for p in self.history.points if p.label)) or "none"
            raise UsageError(f"no result recorded as {', '.join(unknown)} (record one with %cudatime -l NAME); "
                             f"recorded: {recorded}")
        loaded, problems = store.load(files, self.features)
        for problem in problems:  # the lines that did load are still shown
            print(f"cudatime: {problem}", file=sys.stderr)
        fresh = [point for point in loaded.points if point not in chosen.points]  # this kernel saved them too
        shown = Results(chosen.points + fresh, keepers=self.features)
        if not shown.points:
            raise UsageError(f"nothing loaded from {', '.join(files)}" if files else
                             "nothing recorded yet: time cells with %cudatime -l NAME first, or --load FILE")
        hold.start()
        self.display.show(shown)

    @line_magic
    def cudatime_auto(self, line: str = "") -> None:
        """Time every following cell once, synchronized: %cudatime_auto on|off"""
        choice = line.strip().lower()
        if choice not in ("on", "off"):
            raise UsageError("usage: %cudatime_auto on|off")
        self.auto.enable(choice == "on")

