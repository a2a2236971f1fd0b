"""How results are shown: the reports ``%cudatime`` publishes, and how a result echoed as a cell's
value looks. The data (``result``, ``compare``) knows nothing of this layer.

In a notebook kernel: ``text/plain`` (the text report) and self-contained ``text/html``
(the report with its chart as an SVG image), which every frontend renders the same
before and after the notebook is saved and reopened, trusted or not. Widgets are only
for the live progress view (``progress``), which this final bundle replaces through its
display id. In terminal IPython: the text report only. Which of the two is one decision,
made once and passed in (``Display(shell, keepers, notebook=...)``, as rich's ``force_jupyter``),
never a global to patch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from ..render.chart import chart_html
from ..render.comparison import results_html, results_text
from ..render.findings import Reading
from ..render.html import render_html
from ..render.text import render_text
from ..results.compare import Results
from ..results.ratios import Verdicts
from ..results.result import CudaTimeResult

if TYPE_CHECKING:
    from IPython.lib.pretty import RepresentationPrinter

    from ..results.result import RecordKeeper
    from .progress import LiveProgress


def in_notebook(shell: Any) -> bool:
    """Whether ``shell`` runs under a Jupyter kernel (Lab, Notebook, VS Code, Colab)."""
    return getattr(shell, "kernel", None) is not None


def text(obj: CudaTimeResult | Results, keepers: Iterable[RecordKeeper]) -> str:
    """The text report of a result, or of results side by side: the truth every view shares.
    ``keepers`` (the features) word the records, and a table's columns and notes where the results
    carry no features of their own (``Results.keepers``: those the magics or ``store.load`` made them with)."""
    if isinstance(obj, Results):
        return results_text(obj, Verdicts(obj.keepers or keepers))
    return render_text(Reading.of(obj, keepers))


def bundle(obj: CudaTimeResult | Results, keepers: Iterable[RecordKeeper]) -> dict[str, str]:
    """The mimebundle for a result or results side by side: the text report, and the HTML report
    with its chart. Both views read one ``Reading`` of a result, or one ``Verdicts`` of results, so
    that each finding, noise check and contrast is worked out once."""
    if isinstance(obj, Results):
        verdicts = Verdicts(obj.keepers or keepers)  # as in ``text``
        return {"text/plain": results_text(obj, verdicts), "text/html": results_html(obj, verdicts)}
    reading = Reading.of(obj, keepers)
    return {"text/plain": render_text(reading), "text/html": render_html(reading, chart_html(obj))}


class Display:
    """Shows results on one shell.

    ``keepers`` are the features that word a result's records (``features.FEATURES``, handed in
    as the magics are). ``notebook`` is the frontend decision: None detects it (``in_notebook``),
    True or False forces it (tests, or a frontend we misjudge). ``install`` gives echoed results their
    reprs through IPython's formatters, registered by type, so that the data imports no
    display code: the text report as text/plain, and the HTML report as text/html, which
    IPython asks for only where a notebook shows it (terminal IPython never draws a chart).
    """

    SHOWN: ClassVar[tuple[type, ...]] = (CudaTimeResult, Results)

    def __init__(self, shell: Any, keepers: Iterable[RecordKeeper], notebook: bool | None = None) -> None:
        self.shell = shell
        self.keepers = tuple(keepers)
        self.notebook = in_notebook(shell) if notebook is None else notebook
        # (cell, object) last published: its echo in the same cell is one line
        self._shown: tuple[int, object] | None = None

    def show(self, obj: CudaTimeResult | Results, text_only: bool = False, live: LiveProgress | None = None) -> None:
        """Publish a result or results the way this frontend reads best (in a notebook: text and
        HTML), in place of ``live``'s progress view when one is given."""
        self._shown = (self.shell.execution_count, obj)
        data = {"text/plain": text(obj, self.keepers)} if text_only or not self.notebook else bundle(obj, self.keepers)
        if live is not None:
            live.finish(data)  # replaces the progress view, if one is showing
        else:
            from IPython.display import display

            display(data, raw=True)

    def line(self, text: str) -> None:
        """Publish one line (auto mode's): printed in a terminal, text and HTML in a notebook."""
        from html import escape

        if not self.notebook:
            print(text)
            return
        from IPython.display import display

        display({"text/plain": text, "text/html": f"<div class='cudatime-auto'>{escape(text)}</div>"}, raw=True)

    def _just_shown(self, obj: object) -> bool:
        """Whether ``obj`` is what this cell already published (``%cudatime -o stmt``): its Out
        value is then its one-line repr, not the report a second time."""
        shown = self._shown
        return shown is not None and shown[0] == self.shell.execution_count and shown[1] is obj

    def _pretty(self, obj: CudaTimeResult | Results, printer: RepresentationPrinter, cycle: bool) -> None:
        printer.text(repr(obj) if cycle or self._just_shown(obj) else text(obj, self.keepers))

    def _html(self, obj: CudaTimeResult | Results) -> str | None:
        if not self.notebook or self._just_shown(obj):
            return None  # IPython then shows the text/plain alone
        return bundle(obj, self.keepers)["text/html"]

    def install(self) -> None:
        formatters = self.shell.display_formatter.formatters
        for kind in self.SHOWN:
            formatters["text/plain"].for_type(kind, self._pretty)
            formatters["text/html"].for_type(kind, self._html)

    def uninstall(self) -> None:
        formatters = self.shell.display_formatter.formatters
        for kind in self.SHOWN:
            formatters["text/plain"].pop(kind, None)
            formatters["text/html"].pop(kind, None)
