"""Results as plain data that outlive the kernel: exact round trips, --save, %cudatime_compare --load."""

import copy
import dataclasses
import functools
import gc
import inspect
import json
import math
import operator
import pickle
import random
import subprocess
import sys

import pytest
from conftest import in_fresh_shell, run
from IPython.core.error import UsageError
from report_parts import table

from ipython_cudatime import report
from ipython_cudatime.results.compare import Point, Results
from ipython_cudatime.features.cold_causes.probes import Cause
from ipython_cudatime.features.memory.record import DeviceMemory
from ipython_cudatime.features.profile.summary import Profile
from ipython_cudatime.features.roofline.model import Roofline
from ipython_cudatime.results.result import CudaTimeResult, Env, Harness, Run, Task
from ipython_cudatime import load
from ipython_cudatime.results import schema, store
from ipython_cudatime.results import result as result_module
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.cpu_context.context import CpuContext
from ipython_cudatime.results.schema import BadField
from ipython_cudatime.results.store import SCHEMA, save


def through_json(data):
    return json.loads(json.dumps(data))


def full_result():
    """A result with every nested record the explainers add, and params JSON has no type for."""
    task = Task("a @ b", "mm", {"shape": (2, 3), "opts": {"k": [1, 2]}, "kind": "1", "n": 1, "x": 0.1},
                Env("cuda:0 NVIDIA T4", {"torch": "2.5.1"}, "3.11.7", "colab-vm"))
    return CudaTimeResult(
        cold=Run(0.001, 0.4, 0.39, 0.2, 0.1), warmup=[Run(0.001, 0.05, 0.049)],
        warm=[Run(0.001, 0.05 + i * 1e-4, 0.049 + i * 1e-4, batch=10) for i in range(3)],
        device="cuda:0 NVIDIA T4", synchronized=["torch cuda"], notes=["a note"], stopped=None,
        harness=Harness(2e-5, 1e-6, 1.5e-5), task=task, records={
            "cold_causes": [Cause("CUDA context", 0.3, "created by this cell"), Cause("TF32", None, "off", False)],
            "profile": Profile(10, 0.0097, 0.97, [("gemm", 3, 0.005), ("add", 7, 0.001)], "GPU-bound", wall=0.01,
                               breakdown={"compute": 0.009}, kind="GPU-bound"),
            "roofline": Roofline(2e9, 1e8, intensity=20.0, flop_rate=4e10, peak_flops=65e12, peak_bandwidth=3.2e11,
                                 uncounted=[("aten::foo", 2, 0.25)], notes=["n"], verdict="memory-bound"),
            "memory": DeviceMemory(2 << 30, True, 1 << 30, False, reserved_growth=4 << 20, total=16 << 30, before=0),
            "cpu_context": CpuContext(2, 0.4, 0.5, 1, {"torch": 2, "blas": None}, 0.15, 0.16, 0.001, 3, ["torch"],
                                      {"torch": ["torch"], "blas": ["numpy", "torch"]})})


def test_a_result_with_every_record_round_trips_exactly():
    r = full_result()
    back = CudaTimeResult.from_dict(through_json(r.to_dict()), FEATURES)
    assert back == r
    assert back.task.params["shape"] == (2, 3) and back.profile.top[0] == ("gemm", 3, 0.005)
    assert back.harness == r.harness and back.batch == 10
    assert report(back) == report(r)


def _reachable(obj, depth=8):
    """Every object reachable from ``obj`` through ``gc.get_referents``, classes and modules left out."""
    import gc
    import types

    seen, frontier = {}, [obj]
    for _ in range(depth):
        frontier = [item for parent in frontier for item in gc.get_referents(parent)
                    if id(item) not in seen and not isinstance(item, (type, types.ModuleType, types.FunctionType))]
        seen.update((id(item), item) for item in frontier)
    return list(seen.values())


def test_a_result_holds_plain_records_and_reads_back_with_the_features_handed_in(ip):
    """The result keeps no feature: nothing reachable from a measured result or a full one is a
    ``RecordKeeper``. Its plain data comes back equal with the features handed to ``from_dict``, as
    the store hands them; without them no record is read."""
    import dataclasses

    from ipython_cudatime.results.result import RecordKeeper

    live = ip.run_line_magic("cudatime", "-o -q -n 2 -l plain sum(range(100))")
    full = full_result()
    for r in (live, full):
        assert not [item for item in _reachable(r) if isinstance(item, RecordKeeper)]
    assert CudaTimeResult.from_dict(through_json(live.to_dict()), FEATURES) == live
    assert set(live.records) == {feature.name for feature in FEATURES} and live.profile is None  # off: None
    by_hand = CudaTimeResult(cold=Run(0.002, 0.003), warm=[Run(0.001, 0.001)])  # no records: each reads back None
    assert CudaTimeResult.from_dict(through_json(by_hand.to_dict()), FEATURES) == dataclasses.replace(
        by_hand, records=dict.fromkeys(feature.name for feature in FEATURES))
    assert CudaTimeResult.from_dict(through_json(full.to_dict()), FEATURES) == full
    back = Results.from_dict(through_json(Results([Point(full.task, full)]).to_dict()), FEATURES)
    assert back.points[0].result == full and back.keepers == FEATURES
    bare = CudaTimeResult.from_dict(through_json(full.to_dict()), ())  # no feature reads its record back
    assert bare.records == through_json(full.to_dict())["records"] and bare != full
    assert bare.read_by(FEATURES) == full


def test_a_saved_result_reads_back_from_its_data_alone(ip):
    """``from_dict`` needs nothing but the data, as torch's ``Measurement`` does: with no features the
    records stay the saved JSON, the line writes back the same, and ``read_by`` reads them for a view."""
    r = ip.run_line_magic("cudatime", "-o -q -n 3 sum(range(100))")
    assert r.cpu_context is not None  # the default features are on: there are records to keep
    saved = through_json(r.to_dict())
    back = type(r).from_dict(saved)
    assert back.to_dict() == r.to_dict() and back.cpu_context == saved["records"]["cpu_context"]
    assert back.extra_runs == r.extra_runs and back.read_by(FEATURES) == r
    assert report(back) == report(r)  # the view reads the plain records with its features
    assert r.read_by(FEATURES) is r and back.read_by(()) is back  # nothing plain to read: the result itself
    del saved["extra_runs"]
    assert CudaTimeResult.from_dict(saved).extra_runs == []  # not in the data, no feature to name them: none
    assert Results.from_dict(through_json(Results([Point(r.task, r)]).to_dict())).points[0].result == back


def test_saved_results_read_back_from_their_data_alone_show_as_the_live_ones(ip):
    """A sweep read back with no features prints what the live one did: its table's noise column and notes
    come from the plain records, read by the view's features (``Results.read_by``)."""
    live = ip.run_line_magic("cudatime", "-o -q -n 3 --sweep n=10,20 --sweep k=1,2 sum(range(n * k))")
    back = Results.from_dict(through_json(live.to_dict()))
    assert back.to_dict() == live.to_dict() and not back.keepers
    assert isinstance(back.points[0].result.records["cpu_context"], dict)  # plain, as the file held it
    assert report(back) == report(live) and back.read_by(FEATURES).keepers == FEATURES


def test_a_live_result_with_a_profile_and_a_roofline_round_trips(ip):
    pytest.importorskip("torch", reason="-p and --roofline read PyTorch")
    ip.run_cell("import torch\na = torch.randn(64, 64)")
    r = ip.run_line_magic("cudatime", "-o -q -n 2 -p --roofline -l mm a @ a")
    assert r.profile is not None and r.roofline is not None
    assert r.task.stmt == "a @ a" and r.task.label == "mm" and r.task.env.frameworks["torch"] == torch_version(ip)
    assert CudaTimeResult.from_dict(through_json(r.to_dict()), FEATURES) == r


def torch_version(ip):
    return ip.user_ns["torch"].__version__


def test_a_sweep_with_a_check_and_a_failure_round_trips(ip):
    sweep = ip.run_cell_magic("cudatime", "-o -q -n 1 --check --sweep d=1,0,2 --sweep t=(1,2)", "[10 / d] * len(t)")
    assert [p.error is not None for p in sweep.points] == [False, True, False] and sweep.check.compared == 1
    back = Results.from_dict(through_json(sweep.to_dict()), FEATURES)
    assert back == sweep and back.points[1].params == {"d": 0, "t": (1, 2)}
    assert report(back) == report(sweep)


def test_a_comparison_round_trips_and_goes_to_pandas(ip):
    run(ip, "%cudatime_compare --clear")
    run(ip, "%cudatime -q -n 2 -l first 1 + 1")
    run(ip, "%%cudatime -q -n 1 -l grid --sweep n=1,2\nn * 2")
    history = ip.magics_manager.registry["CudaTimeMagics"].history
    assert [p.name for p in history.points] == ["first", "grid[n=1]", "grid[n=2]"]
    assert Results.from_dict(through_json(history.to_dict()), FEATURES) == history
    pandas = pytest.importorskip("pandas", reason="pandas not installed (it stays optional)")
    frame = history.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["label"]) == ["first", "grid", "grid"] and set(frame["host"]) == {Env.here("cpu").host}


def test_env_reads_versions_without_importing_anything(monkeypatch):
    class Module:
        __version__ = "9.9"

    monkeypatch.setitem(sys.modules, "torch", Module())
    monkeypatch.setitem(sys.modules, "jax", None)
    env = Env.here("cpu", frameworks=("torch", "jax"))
    assert env.frameworks == {"torch": "9.9"} and env.python and env.host


def test_save_appends_one_line_per_result_and_per_point(ip, tmp_path):
    path = tmp_path / "runs.jsonl"
    run(ip, f"%cudatime -q -n 1 -l one --save {path} 1 + 1")
    run(ip, f"%%cudatime -q -n 1 --save '{path}' --sweep n=1,2\nn")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 3 and {line["schema"] for line in lines} == {SCHEMA}
    assert [line["task"]["label"] for line in lines] == ["one", None, None]
    assert [line["task"]["params"] for line in lines] == [{}, {"n": 1}, {"n": 2}]
    with pytest.raises(UsageError, match="no such folder") as info:
        ip.run_line_magic("cudatime", f"--save {tmp_path}/missing/runs.jsonl 1")
    assert "\n" not in str(info.value)
    with pytest.raises(UsageError, match="is a folder: name a file in it, such as .*results.jsonl"):
        ip.run_line_magic("cudatime", f"--save {tmp_path} 1")  # refused before anything runs
    cell = run(ip, "%cudatime -n 1 --save /proc/cudatime.jsonl 1 + 1")  # a folder nobody can write in
    assert cell.error is None and "--save /proc/cudatime.jsonl: not saved" in cell.stderr
    assert cell.displayed[0].startswith("CPU times:")


SAVE = (
    "ip.run_cell('%cudatime -q -n 3 -l loop --save {path} sum([i * i for i in range(2000)])')\n"
    "ip.run_cell('%%cudatime -q -n 2 -l sq --save {path} --sweep n=10,1000\\nsum(range(n))')\n"
)
COMPARE = (
    "from IPython.utils.capture import capture_output\n"
    "import json\n"
    "with capture_output() as out:\n"
    "    ip.run_cell('%cudatime_compare {arguments}')\n"
    "print('TABLES', json.dumps([o.data['text/plain'] for o in out.outputs]))\n"
)


def tables(line):
    """The tables a fresh shell printed (IPython 7 may put a terminal-title escape before them)."""
    return json.loads(line.split("TABLES ", 1)[1])


def test_save_then_load_in_a_fresh_shell_shows_the_same_table(tmp_path):
    path = tmp_path / "kept.jsonl"
    live = tables(in_fresh_shell(SAVE.format(path=path) + COMPARE.format(arguments="")))
    loaded = tables(in_fresh_shell(COMPARE.format(arguments=f"--load {path}")))
    assert loaded == live and len(live) == 1
    assert [line.split()[0] for line in live[0].splitlines()[:4]] == ["label", "loop", "sq[n=10]", "sq[n=1000]"]
    assert live[0].splitlines()[4].startswith("sq[n=10] against loop: ")  # each row against the first, in words


def test_loaded_results_sit_beside_live_ones_named_by_their_machine(ip, tmp_path):
    elsewhere = full_result()
    path = tmp_path / "colab.jsonl"
    save([Point(elsewhere.task, elsewhere)], str(path))
    run(ip, "%cudatime_compare --clear")
    run(ip, "%cudatime -q -n 2 -l local 1 + 1")
    run(ip, f"%cudatime -q -n 2 -l local2 --save {path} 2 + 2")
    cell = run(ip, f"%cudatime_compare local local2 --load {path}")
    [text] = cell.displayed
    header, rows = table(text)  # the rows, not the sentences under them (a busy machine adds a noise cause)
    here = Env.here("cpu").host
    names = [row[0] for row in rows]  # local2, saved by this kernel, is shown once
    assert names == [f"local @ {here}", f"local2 @ {here}",
                     "mm[shape=(2, 3), opts={'k': [1, 2]}, kind='1', n=1, x=0.1] @ colab-vm"]
    assert rows[2][header.index("device")] == "cuda:0 NVIDIA T4"


def test_bad_and_foreign_lines_are_named_and_the_rest_still_load(ip, tmp_path):
    good = full_result()
    path = tmp_path / "mixed.jsonl"
    save([Point(good.task, good)], str(path))
    with open(path, "a") as file:
        file.write("{not json\n\n" + json.dumps({"some": "other tool"}) + "\n")
        file.write(json.dumps({"format": "ipython_cudatime", "schema": SCHEMA, "cold": {}}) + "\n")
    save([Point(good.task, good)], str(path))
    loaded, problems = load([str(path)])
    assert len(loaded.points) == 2 and loaded.points[0].result == good
    assert [problem.split(":")[0] for problem in problems] == [f"{path}, line {n}" for n in (2, 4, 5)]
    assert "not JSON" in problems[0] and "not a line --save wrote" in problems[1]
    assert "bad field: warmup is missing" in problems[2]
    run(ip, "%cudatime_compare --clear")
    cell = run(ip, f"%cudatime_compare --load {path}")
    assert f"{path}, line 2: not JSON" in cell.stderr and len(table(cell.displayed[0])[1]) == 2


def test_a_file_from_a_newer_schema_is_refused_with_a_message(ip, tmp_path):
    good = full_result()
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"format": "ipython_cudatime", "schema": SCHEMA + 1, **good.to_dict()}) + "\n")
    loaded, problems = load([str(newer)])
    assert loaded.points == [] and problems == [
        f"{newer}: written with schema {SCHEMA + 1}, newer than this ipython_cudatime reads ({SCHEMA}); "
        "not loaded: upgrade ipython_cudatime to read it"]
    run(ip, "%cudatime_compare --clear")
    with pytest.raises(UsageError, match="nothing loaded from"):
        ip.run_line_magic("cudatime_compare", f"--load {newer}")
    with pytest.raises(UsageError, match="--load expects one or more files"):
        ip.run_line_magic("cudatime_compare", "--load")


def saved_line(result, **changes):
    """The line --save writes for ``result``, with ``changes`` applied to its data first: a field
    path such as ``warm.0.wall`` set to a value (a value of ``...`` deletes the field)."""
    data = {"format": "ipython_cudatime", "schema": SCHEMA, **result.to_dict()}
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        key = int(last) if isinstance(node, list) else last
        if value is ...:
            del node[key]
        else:
            node[key] = value
    return json.dumps(data)


def test_separators_inside_strings_keep_every_result_on_its_own_line(ip, tmp_path):
    """U+2028, U+2029, U+0085 and the other characters str.splitlines splits at, in swept strings:
    each point saved is one line, and loads back whole."""
    path = tmp_path / "separators.jsonl"
    values = ["'\\u2028'", "'\\u2029'", "'\\x85'", "'\\x0b\\x0c\\x1c\\x1d\\x1e'", "'a\\r\\nb'", "'ok'"]
    cell = run(ip, f"%%cudatime -q -n 1 -l séparé✓ --save {path} --sweep s={','.join(values)}\nlen(s)")
    assert cell.error is None
    text = path.read_bytes().decode("ascii")  # written as ASCII: every other character escaped
    assert len(text.split("\n")) == 7 and len(text.splitlines()) == 6
    loaded, problems = load([str(path)])
    assert problems == []
    assert [p.params["s"] for p in loaded.points] == ["\u2028", "\u2029", "\x85", "\x0b\x0c\x1c\x1d\x1e", "a\r\nb", "ok"]
    assert {p.label for p in loaded.points} == {"séparé✓"}


def test_a_save_after_a_line_cut_short_keeps_the_new_result_whole(tmp_path):
    good = full_result()
    path = tmp_path / "cut.jsonl"
    save([Point(good.task, good)] * 2, str(path))
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 40])  # the second save was interrupted mid-line
    save([Point(good.task, good)], str(path))
    loaded, problems = load([str(path)])
    assert [point.result for point in loaded.points] == [good, good]
    assert len(problems) == 1 and problems[0].startswith(f"{path}, line 2: not JSON")
    save([Point(good.task, good)], str(path))  # a whole file gets no blank line
    assert path.read_bytes().count(b"\n\n") == 0 and len(load([str(path)])[0].points) == 3


DEEP = '{"format": "ipython_cudatime", "schema": 1, "cold": ' + "[" * 200_000 + "]" * 200_000 + "}"
HOSTILE = [  # (how the line is spoiled, what the problem must say)
    ({"device": {"a": 1}}, "device must be a string, got an object"),
    ({"task.label": 12345}, "task.label must be a string, got 12345"),
    ({"task.label": ["a"]}, "task.label must be a string, got a list"),
    ({"warm.0.wall": float("inf")}, "warm[0].wall must be a finite number of seconds, not negative, got Infinity"),
    ({"warm.1.device": float("nan")}, "warm[1].device must be a finite number of seconds, not negative, got NaN"),
    ({"cold.wall": -8.1}, "cold.wall must be a finite number of seconds, not negative, got -8.1"),
    ({"warm.0.batch": True}, "warm[0].batch must be a whole number, at least 1, got true"),
    ({"schema": True}, "no schema version"),
    ({"task.env.host": 5}, "task.env.host must be a string, got 5"),
    ({"task.params.shape": {"literal": "(" * 100_000 + ")" * 100_000}},
     'task.params["shape"] is a literal of 200,000 characters (at most 10,000)'),
    ({"task.params.shape": {"literal": "'\\d'"}}, 'task.params["shape"] is not a Python literal'),
    ({"task.params.shape": {"literal": "__import__('os')"}}, 'task.params["shape"] is not a Python literal'),
    ({"records.profile.top.0.1": "3"}, "records.profile.top[0][1] must be a whole number, not negative, got a string"),
    ({"records.profile.breakdown": {"compute": -1}}, 'records.profile.breakdown["compute"] must be a finite number of seconds'),
    ({"records.memory.cold_exact": 1}, "records.memory.cold_exact must be true or false, got 1"),
    ({"records.cold_causes.0.name": None}, "records.cold_causes[0].name must be a string, got null"),
    ({"harness.jitter": ...}, "harness.jitter is missing"),
    ({"harness.jitter": 10**400}, "harness.jitter must be a finite number of seconds, not negative, got 1000"),
    ({"notes": "a note"}, "notes must be a list, got a string"),
    ({"task.params.shape": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
     "nested more than 32 levels deep"),
]


def test_each_bad_field_is_one_problem_by_line_and_the_good_lines_load(ip, tmp_path):
    good = full_result()
    path = tmp_path / "hostile.jsonl"
    lines = [saved_line(good)]
    for changes, _ in HOSTILE:
        lines += [saved_line(good, **changes), saved_line(good)]
    lines += [DEEP, saved_line(good).replace('"mm"', '"' + "x" * 200_000 + '"')]  # a long label is fine
    path.write_text("\n".join(lines) + "\n")
    loaded, problems = load([str(path)])
    assert len(loaded.points) == len(HOSTILE) + 2 and all(p.result == good for p in loaded.points[:-1])
    assert loaded.points[-1].label == "x" * 200_000
    expected = [(2 * n + 2, why) for n, (_, why) in enumerate(HOSTILE)] + [(2 * len(HOSTILE) + 2, "nested more")]
    assert len(problems) == len(expected)
    for problem, (number, why) in zip(problems, expected):
        assert problem.startswith(f"{path}, line {number}: ") and why in problem, (problem[:300], why)
    run(ip, "%cudatime_compare --clear")
    cell = run(ip, f"%cudatime_compare --load {path}")
    assert cell.error is None and cell.stderr.count("cudatime: ") == len(expected)
    text = cell.displayed[0]
    rows = table(text)[1]
    assert len(rows) == len(loaded.points)
    sentences = text.splitlines()[1 + len(rows):]  # 8 rows against the first in words, then "... and 12 more"
    assert [" against " in line for line in sentences[:9]] == [True] * 8 + [False]
    assert sentences[8].startswith(f"... and {len(rows) - 9} more rows")


def test_a_line_beyond_the_size_limit_is_skipped_unread(tmp_path, monkeypatch):
    import ipython_cudatime.results.store as store

    good = full_result()
    monkeypatch.setattr(store, "MAX_LINE", len(saved_line(good)) + 100)
    path = tmp_path / "long.jsonl"
    path.write_text(saved_line(good) + "\n" + saved_line(good).replace('"mm"', '"' + "x" * 5000 + '"') + "\n"
                    + saved_line(good) + "\n")
    loaded, problems = load([str(path)])
    assert len(loaded.points) == 2 and problems == [
        f"{path}, line 2: longer than the {store.MAX_LINE:,} bytes a line may hold; skipped"]


def test_a_line_that_is_not_utf8_is_one_problem(tmp_path):
    good = full_result()
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(saved_line(good).encode() + b"\n" + b'{"label": "caf\xe9"}\n' + saved_line(good).encode())
    loaded, problems = load([str(path)])
    assert len(loaded.points) == 2 and len(problems) == 1 and "line 2: not UTF-8" in problems[0]


def test_every_field_of_every_saved_record_is_checked():
    """A field added to a record must be declared in ``schema``: else it would be dropped on load,
    or a file could put anything in it."""
    import dataclasses

    from ipython_cudatime.results import schema

    kept = [(Run, schema.RUN), (Env, schema.ENV), (Task, schema.TASK), (Harness, schema.HARNESS)]
    kept += [pair for feature in FEATURES for pair in type(feature).record_checks]  # each feature's own
    assert {cls.__name__ for cls, _ in kept} >= {"Cause", "Profile", "Roofline", "DeviceMemory", "CpuContext"}
    for cls, check in kept:
        fields = cls._fields if hasattr(cls, "_fields") else [field.name for field in dataclasses.fields(cls)]
        assert set(fields) == set(check.fields), cls.__name__
    own = {field.name for field in dataclasses.fields(CudaTimeResult) if field.init}
    assert own == set(schema.result_record(FEATURES).fields)  # the records under "records", each by its schema
    assert [feature.name for feature in FEATURES if type(feature).schema is None] == []


DELETED, RENAMED = object(), object()  # a key spoiled: deleted, or renamed to one this version does not declare
SPOILERS = [None, True, 0, -1, 0.5, float("inf"), float("nan"), 10**400, "3", [], {}, [1.5], [[]], {"literal": "(1,)"}]


def places(node, path=()):
    """The path of every value below ``node`` (keys and indexes), parents before their items."""
    items = node.items() if type(node) is dict else enumerate(node) if type(node) is list else ()
    for key, item in items:
        yield (*path, key)
        yield from places(item, (*path, key))


def spoiled(data):
    """Copies of ``data`` with one thing changed at one place: every value replaced by each of
    ``SPOILERS``, every key deleted and renamed, a key added to every object, every object's keys
    reversed (the compiled check reads an object of as many keys as fields in one step, any other
    field by field)."""
    text = json.dumps(data)
    for *parents, last in places(data):
        for spoiler in [*SPOILERS, DELETED, RENAMED]:
            line = json.loads(text)
            node = functools.reduce(operator.getitem, parents, line)
            if spoiler is not DELETED and spoiler is not RENAMED:
                node[last] = copy.deepcopy(spoiler)
            elif type(node) is dict:
                value = node.pop(last)
                if spoiler is RENAMED:  # as many keys, one of them foreign
                    node["renamed_by_a_newer_version"] = value
            yield line
    for path in [(), *places(data)]:
        for reordered in (False, True):
            line = json.loads(text)
            node = functools.reduce(operator.getitem, path, line)
            if type(node) is not dict or reordered and len(node) < 2:
                continue
            items = list(node.items())[::-1] if reordered else [*node.items(), ("added_by_a_newer_version", 1)]
            node.clear()
            node.update(items)
            yield line


def outcome(check, line):
    """What a check makes of a line: the data it keeps (as sorted JSON, NaN included), or its message."""
    try:
        return "kept", json.dumps(check(line), sort_keys=True)
    except BadField as exc:
        return "refused", str(exc)


def test_the_compiled_check_keeps_exactly_what_the_full_check_keeps(ip):
    """Loading tries each line's compiled check first (``record.fast``), and the full one, which gives the
    messages, only where the compiled one is unsure (``record.quick``). Over thousands of lines spoiled
    at every place, the compiled check never keeps a line the full one refuses, nor keeps it
    differently, and ``quick`` gives the full check's outcome, message included."""
    good = full_result()
    failed = Point(good.task, None, "ZeroDivisionError: division by zero")
    live = run(ip, "%cudatime -q -o -n 3 sum(range(40))").value
    lines = [(schema.result_record(FEATURES), through_json({"format": "ipython_cudatime", "schema": SCHEMA,
                                                             **good.to_dict()})),
             (schema.result_record(FEATURES), through_json(live.to_dict())),
             (schema.FAILED, through_json(failed.to_dict()))]
    spoilt = kept_fast = 0
    for check, data in lines:
        assert outcome(check.fast, data) == outcome(check, data)  # a well-formed line takes the fast path
        for line in spoiled(data):
            full = outcome(check, line)
            assert outcome(check.quick, line) == full, line
            spoilt += 1
            try:
                fast = check.fast(line)  # never a BadField: what it is unsure of, the full check answers
            except schema._Unsure:
                continue
            assert ("kept", json.dumps(fast, sort_keys=True)) == full, (line, fast, full)
            kept_fast += 1
    assert spoilt > 3000 and kept_fast > 1000, (spoilt, kept_fast)  # e.g. a time changed to 0.5: still fast


def test_clocks_read_back_as_a_call_by_keyword_reads_them():
    """``clocks.from_saved`` puts a saved run's values straight into the tuple where its keys are the
    fields (in any order); keys missing (defaults) or foreign (TypeError) take the call."""
    from ipython_cudatime.results.result import from_saved

    run_ = Run(1.0, 2.0, 0.5, 0.1, 0.2, 3)
    written = json.loads(json.dumps(run_._asdict()))
    for data in (written, dict(reversed(written.items())), {"wall": 2.0, "host": 1.0}, {"host": 1.0, "wall": 2.0}):
        assert from_saved(Run, data) == Run(**data) and type(from_saved(Run, data)) is Run
    assert from_saved(Harness, {"wall": 1.0, "jitter": 0.5, "device": None}) == Harness(1.0, 0.5)
    with pytest.raises(TypeError):
        from_saved(Run, {**written, "extra": 1})
    with pytest.raises(TypeError):  # as many keys as fields, one of them foreign: the call names it
        from_saved(Run, {**{key: value for key, value in written.items() if key != "batch"}, "extra": 1})


def test_a_schema_too_deep_to_compile_is_still_checked():
    """Python compiles some 20 nested loops at most: a record whose lists nest deeper (a feature's own
    schema could) is checked by the call alone, with the same answers."""
    deep, value = schema.TEXT, "a"
    for _ in range(30):
        deep, value = schema.list_of(deep), [value]
    check = schema.record({"x": deep})
    assert check.quick({"x": value, "y": 1}) == {"x": value}
    with pytest.raises(BadField, match=r"x\[0\]\[0\]"):
        check.quick({"x": [[5]]})


def test_loading_leaves_the_cycle_collector_as_it_was(tmp_path):
    """Loading holds the collector off while it reads (``store._collector_paused``): on or off before, so after."""
    good = full_result()
    path = tmp_path / "one.jsonl"
    save([Point(good.task, good)], str(path))
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert len(load(str(path))[0].points) == 1 and gc.isenabled() is enabled
    finally:
        gc.enable()


def test_a_line_whose_records_are_null_loads_without_them(tmp_path):
    """``records`` may be null (a line of no feature's record): the line loads, each record None."""
    good = full_result()
    path = tmp_path / "null.jsonl"
    path.write_text(json.dumps({"format": "ipython_cudatime", "schema": SCHEMA, **good.to_dict(), "records": None}) + "\n")
    loaded, problems = load(str(path))
    assert problems == [] and loaded.points[0].result == dataclasses.replace(
        good, records=dict.fromkeys(feature.name for feature in FEATURES))


def test_a_line_without_records_reads_nothing_beside_its_fields_as_one(tmp_path):
    """A line of this schema keeps its records under "records": keys beside the fields named like a
    feature (unchecked: the check keeps the top of a line as it is) are never read as its records."""
    good = full_result()
    data = {"format": "ipython_cudatime", "schema": SCHEMA, **good.to_dict()}
    del data["records"]
    path = tmp_path / "beside.jsonl"
    path.write_text(json.dumps({**data, "cpu_context": {"cores": "many"}, "roofline": [1, 2]}) + "\n")
    loaded, problems = load(str(path))
    assert problems == [] and loaded.points[0].result == dataclasses.replace(
        good, records=dict.fromkeys(feature.name for feature in FEATURES))


def test_loaded_results_wait_in_the_oldest_generation_and_frozen_objects_stay_frozen(tmp_path):
    """Loaded results go to the collector's oldest generation, so that the next young collection does
    not walk them all; where something was frozen (``gc.freeze``), loading leaves it frozen."""
    good = full_result()
    path = tmp_path / "many.jsonl"
    save([Point(good.task, good)] * 50, str(path))
    loaded = load(str(path))[0]
    oldest = {id(item) for item in gc.get_objects(generation=2)}
    assert all(id(point.result) in oldest for point in loaded.points)
    gc.freeze()
    try:  # unfreezing would empty the permanent generation (what dies in it leaves it too: the count may drop)
        assert len(load(str(path))[0].points) == 50 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_extreme_but_valid_times_load_and_render_in_a_notebook(ip, seams, tmp_path):
    """Zero and huge times are valid: the table and the charts (comparison and sweep) still draw."""
    good = full_result()
    zero = {f"{kind}.{field}": 0 for kind in ("cold", "warm.0", "warm.1", "warm.2") for field in ("host", "wall", "device")}
    huge = {"cold.wall": 1e300, "cold.device": 1e300, "warm.0.device": 1e300}
    seams(notebook=True)
    for name, label in (("compared", "task.label"), ("swept", "task.params.n")):  # 3 labels; one label's sweep
        path = tmp_path / f"{name}.jsonl"
        lines = [saved_line(good, **zero, **{label: "zero"}), saved_line(good, **huge, **{label: "huge"}),
                 saved_line(good)]
        path.write_text("\n".join(lines) + "\n")
        run(ip, "%cudatime_compare --clear")
        cell = run(ip, f"%cudatime_compare --load {path}")
        assert cell.error is None and cell.stderr == "" and "<img" in cell.outputs[0].data["text/html"]
        lines = cell.outputs[0].data["text/plain"].splitlines()
        assert lines[0].startswith(("label", "point")) and not any(" against " in line for line in lines[1:4])  # header, 3 rows
        assert all(" against " in line or "ause" in line for line in lines[4:])  # then only sentences under the table


def test_a_batched_line_without_a_harness_still_reads(tmp_path):
    """The schema allows ``"harness": null`` (older lines) beside warm runs of k runs per sample: the
    report then says the harness's cost is not known, rather than failing."""
    data = full_result().to_dict()
    data["harness"] = None
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"format": "ipython_cudatime", "schema": SCHEMA, **data}) + "\n")
    loaded, problems = load([str(path)])
    assert problems == [] and loaded.points[0].result.batch == 10
    assert "harness's own cost per sample (n/a" in report(loaded.points[0].result)


def test_a_saved_result_compared_with_a_live_one_names_what_else_differs(ip, tmp_path):
    """Beside the verdict, what differs besides the code, as both results recorded it: the device,
    Python's version and a framework's (NumPy, imported on both sides), then what the CPU facts
    differ in (the pools each saw; the load, where it was a core's worth apart)."""
    import platform

    import numpy

    saved = full_result()
    env = dataclasses.replace(saved.task.env, python="3.9.1", frameworks={"numpy": "1.0.0"})
    saved = dataclasses.replace(saved, task=dataclasses.replace(saved.task, label="before", params={}, env=env))
    path = tmp_path / "before.jsonl"
    save([Point(saved.task, saved)], str(path))
    run(ip, "%cudatime_compare --clear")
    run(ip, "import numpy\n%cudatime -q -n 6 -l after numpy.ones(3).sum()")
    [text] = run(ip, f"%cudatime_compare --load {path}").displayed
    [line] = [line for line in text.splitlines() if " against " in line]
    assert line.startswith("before @ colab-vm against after @ ") and "(also differs: device cpu " in line
    assert (f" vs cuda:0 NVIDIA T4; Python {platform.python_version()} vs 3.9.1; numpy {numpy.__version__} vs 1.0.0; "
            "thread pools ") in line and " vs torch 2, blas not seen (threadpoolctl is not installed)" in line
    run(ip, "%cudatime_compare --clear")  # the shell is the session's: leave no record to later tests


def python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_lines_orjson_would_misread_or_refuse_load_as_json_reads_them(tmp_path):
    """Values the schema allows that orjson reads otherwise than json: an integer beyond 64 bits (orjson
    makes it a float, silently), NaN in a swept value and a lone surrogate in a note (orjson refuses
    both). Each line loads with json's values, as it did before orjson read lines."""
    result = full_result()
    lines = [saved_line(result, **{"warm.0.wall": 2**70, "cold.batch": 10**20}),
             saved_line(result, **{"task.params.x": float("nan")}), saved_line(result, notes=["\ud800"])]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loaded, problems = load([str(path)])
    assert problems == []
    big, nan, surrogate = (point.result for point in loaded.points)
    assert type(big.warm[0].wall) is int and big.warm[0].wall == 2**70 and big.cold.batch == 10**20
    assert math.isnan(nan.params["x"]) and surrogate.notes == ["\ud800"]


def outcome_of(decode, raw):
    """What ``decode`` gives for ``raw``: the value's type and repr (float spellings and key order
    included), or the error's type and message."""
    try:
        value = decode(raw)
    except (ValueError, RecursionError) as error:
        return type(error), str(error)
    return type(value), repr(value)


def test_the_store_decoder_reads_every_line_exactly_as_json_does():
    """Odd numbers, strings, spacing and nesting, spoiled bytes: the decoder ``load`` uses gives what
    ``json.loads`` gives, or the same error. Nesting is read with little recursion left, where json
    runs out of it (Python 3.10-3.11) and orjson does not: that line goes to json too."""
    decode = store.decoder()
    base = saved_line(full_result()).encode()
    cases = [b"NaN", b"[-Infinity]", b"1e400", b"-0", b"-0.0", b"18446744073709551615", b"18446744073709551616",
             b"-9223372036854775809", b'{"a": 1e+0000000000000000000005}', b"[1, 12345678901234567890123.5]",
             b"[18446744073709551616, -18446744073709551616]", b'{"a":[[99999999999999999999]]}',
             b'"\\ud800"', b'"\xed\xa0\x80"', b'"\xff"', b'{"a": 1, "a": 2}', b"\xef\xbb\xbf{}", b"\x0c{}", b"[1,]",
             b"01", b'"\x1f"', b"\t{}\r\n", b"[" * 70 + b"]" * 70, b"[" * 1100 + b"]" * 1100,
             b"[" + b", ".join(b"[]" for _ in range(100)) + b"]", b"0.000" + b"1" * 30]
    rng = random.Random(35)
    where = rng.sample(range(len(base)), 200)
    spoiled_bytes = [base[:i] + bytes([rng.randrange(256)]) + base[i + 1:] for i in where]
    floats = [repr(rng.random() * 10 ** rng.randint(-30, 30)).encode() for _ in range(500)]
    for raw in cases + spoiled_bytes + floats:
        assert outcome_of(decode, raw) == outcome_of(lambda raw: json.loads(raw.decode()), raw), raw
    deep = b"[" * 400 + b"]" * 400
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 300)
    try:
        assert outcome_of(decode, deep) == outcome_of(lambda raw: json.loads(raw.decode()), deep)
    finally:
        sys.setrecursionlimit(limit)


def test_orjson_reads_the_lines_where_installed_and_loads_only_with_the_first_load(tmp_path):
    """The decoder is orjson's, guarded; neither ``import ipython_cudatime`` nor the store imports it."""
    import orjson

    decode = store.decoder()
    assert decode.func is store._exactly and decode.args == (orjson.loads,)
    path = tmp_path / "one.jsonl"
    save([Point(full_result().task, full_result())], path)
    code = ("import sys, ipython_cudatime\nfrom ipython_cudatime.results import store\nprint('orjson' in sys.modules)\n"
            f"ipython_cudatime.load({str(path)!r})\nprint('orjson' in sys.modules)")
    assert python(code) == ["False", "True"]


def test_without_orjson_lines_load_with_json(tmp_path):
    """Where orjson is not installed (here: blocked before the first load), json reads the lines, odd ones too."""
    path = tmp_path / "odd.jsonl"
    path.write_text(saved_line(full_result(), **{"warm.0.wall": 2**70, "task.params.x": float("inf")}) + "\n")
    code = ("import sys\nsys.modules['orjson'] = None\nfrom ipython_cudatime import load\nfrom ipython_cudatime.results import store\n"
            f"loaded, problems = load({str(path)!r})\nresult = loaded.points[0].result\n"
            "print(store.decoder() is store._standard, problems, result.warm[0].wall == 2**70, result.params['x'])")
    assert python(code) == ["True [] True inf"]


def test_a_result_read_back_is_the_object_its_constructor_makes():
    """``from_dict`` fills a frozen result's, task's and environment's fields in one go (``frozen_from``): the
    objects compare, print, (fail to) hash and pickle as those their ``__init__`` makes, their fields in the same order.
    A mapping whose keys are not ``__init__``'s, in order, takes the call itself."""
    r = full_result()
    back = CudaTimeResult.from_dict(through_json(r.to_dict()), FEATURES)
    by_init = dataclasses.replace(back)
    assert back == by_init and repr(back) == repr(by_init) and list(vars(back).items()) == list(vars(by_init).items())
    assert pickle.dumps(back) == pickle.dumps(by_init) and pickle.loads(pickle.dumps(back)) == r
    assert back.task == dataclasses.replace(back.task) and back.task.env == dataclasses.replace(back.task.env)
    for made in (back, by_init, back.task.env):  # neither hashes: they hold lists and dicts
        with pytest.raises(TypeError, match="unhashable"):
            hash(made)
    assert result_module.frozen_from(Env, {"python": "3.11", "device": "cuda:0"}) == Env("cuda:0", {}, "3.11")
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.device = "cpu"
