"""A test-only feature (a stand-in named as such): the cell's length in characters, and a line
saying it. It is what adding a feature takes: this one module, and one line in the feature list
(``FEATURES + (SourceLength(),)``, as ``tests/test_features.py`` passes it to the magics)."""

from ipython_cudatime.features.feature import Feature
from ipython_cudatime.render.report import Finding
from ipython_cudatime.command.options import Flag
from ipython_cudatime.measure.runner import Watch
from ipython_cudatime.results.schema import COUNT


class LengthWatch(Watch):
    def __init__(self, source):
        self.source = source

    def record(self, outcome):
        return len(self.source)


class SourceLength(Feature):
    name = "source_length"
    flags = (Flag(("--source-length",), "source_length", "record the cell's length in characters", default=False),)
    schema = staticmethod(COUNT)
    section_title = "Source"
    section_class = "cudatime-section-source"
    columns = ("chars",)

    def settings(self, values):
        return True if values.source_length else None

    def watch(self, settings, call):
        return LengthWatch(call.source)

    def from_json(self, data):
        return data

    def text_lines(self, result, record):
        return [] if record is None else [f"source   : {record} characters"]

    def findings(self, result, record):
        return [] if record is None else [Finding("source", f"The cell is {record} characters long.")]

    def section_html(self, result, record):
        return "" if record is None else f"<div class='cudatime-source'>{record} characters</div>"

    def cells(self, record):
        return ("" if record is None else str(record),)

    def table_fields(self, record):
        return {"chars": record}
