"""%cudatime has %time's semantics: values, `_`, `;`, namespaces, output once, setup."""

import ast

from conftest import run


def test_line_magic_returns_value_and_updates_underscore(ip):
    cell = run(ip, "%cudatime -n 3 40 + 2")
    assert cell.error is None
    assert cell.value == 42
    assert ip.user_ns["_"] == 42


def test_cell_magic_returns_final_expression(ip):
    cell = run(ip, "%%cudatime -n 2\nx = 20\nx * 2 + 2")
    assert cell.value == 42
    assert ip.user_ns["x"] == 20
    assert ip.user_ns["_"] == 42


def test_value_is_displayed_once_and_report_once(ip):
    cell = run(ip, "%cudatime -n 5 'the-value'")
    reports = [text for text in cell.displayed if text.startswith("CPU times:")]
    assert len(reports) == 1
    assert cell.stdout.count("the-value") == 1  # the displayhook's Out[...] line


def test_trailing_semicolon_hides_value_not_report(ip):
    for source in ("%cudatime -n 2 6 * 7;", "%%cudatime -n 2\n6 * 7;  # hidden\n"):
        cell = run(ip, source)
        assert cell.value is None, source
        assert "42" not in cell.stdout
        assert any(text.startswith("CPU times:") for text in cell.displayed)


def test_assignments_and_side_effects_persist(ip):
    run(ip, "log = []")
    cell = run(ip, "%%cudatime -n 4 -w 2\nlog.append(1)\ny = len(log)")
    assert cell.error is None
    assert ip.user_ns["log"] == [1] * 7  # -n forced cold + 2 warm-up + 4 warm in-place appends
    assert ip.user_ns["y"] == 1  # the names hold what the cold run bound
    assert "The state reflects all 7 runs" in cell.displayed[0]


def test_printed_output_appears_once(ip):
    cell = run(ip, "%%cudatime -n 5\nprint('printed-by-cell')\nimport sys; print('err-by-cell', file=sys.stderr)")
    assert cell.stdout.count("printed-by-cell") == 1
    assert cell.stderr.count("err-by-cell") == 1


def test_display_calls_in_the_cell_appear_once(ip):
    cell = run(ip, "%%cudatime -n 3\nfrom IPython.display import display\ndisplay('shown-by-cell')")
    assert sum("shown-by-cell" in text for text in cell.displayed) == 1


def test_setup_on_the_magic_line_runs_once_untimed(ip):
    run(ip, "calls = []")
    cell = run(ip, "%%cudatime -n 3 calls.append('setup'); base = 40\ncalls.append('cell')\nbase + 2")
    assert cell.value == 42
    assert ip.user_ns["calls"].count("setup") == 1
    assert ip.user_ns["calls"].count("cell") == 1 + 3  # cold, then the 3 runs -n forces (no warm-up)


def test_braces_are_not_expanded(ip):
    run(ip, "var = 'EXPANDED'")
    cell = run(ip, "%cudatime -n 1 '{var}'")
    assert cell.value == "{var}"


def test_magics_and_shell_commands_work_inside_the_cell(ip):
    # `x = !cmd` is left out: IPython 7.34 on Python 3.13 cannot transform it in any cell.
    cell = run(ip, "%%cudatime -n 1\n%config PlainTextFormatter.pprint = True\n!true\nout = %sx echo from-shell\nout[0]")
    assert cell.error is None
    assert cell.value == "from-shell"


def test_user_ast_transformers_apply(ip):
    class IntsToStr(ast.NodeTransformer):
        def visit_Constant(self, node):
            if node.value == 7:
                return ast.copy_location(ast.Constant(value=700), node)
            return node

    transformer = IntsToStr()
    ip.ast_transformers.append(transformer)
    try:
        cell = run(ip, "%cudatime -n 1 7 + 0")
    finally:
        ip.ast_transformers.remove(transformer)
    assert cell.value == 700


def test_line_magic_sees_function_locals(ip):
    cell = run(ip, "def f():\n    local_only = 41\n    r = %cudatime -n 2 local_only + 1\n    return r\nf()")
    assert cell.error is None
    assert cell.value == 42


def test_outer_cell_result_is_kept(ip):
    """The magic must not call run_cell: the outer cell's own result survives."""
    cell = run(ip, "%cudatime -n 1 z = 1\n'outer'")
    assert cell.value == "outer"
    assert ip.user_ns["z"] == 1


def test_quiet_line_magic_value_is_assigned_and_nothing_shown(ip):
    cell = run(ip, "r = %cudatime -n 1 -q 5")
    assert ip.user_ns["r"] == 5
    assert cell.displayed == []
