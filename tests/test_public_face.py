"""The package's public face (``__all__``) and its house rule: imports point down the layers."""

import ast
from pathlib import Path

import ipython_cudatime
from ipython_cudatime import CudaTimeResult, Env, Task
from ipython_cudatime.results.result import Run

PACKAGE = Path(ipython_cudatime.__file__).parent


def test_all_names_what_users_import():
    for name in ("CudaTimeResult", "Results", "load", "save", "report", "profile_trace"):
        assert name in ipython_cudatime.__all__
    for name in ipython_cudatime.__all__:
        assert getattr(ipython_cudatime, name) is not None, name
    assert (PACKAGE / "py.typed").is_file()


def test_result_forwards_its_task_as_measurement_does():
    env = Env("cpu", {}, "3.11.7", "here")
    result = CudaTimeResult(cold=Run(2.0, 2.0), task=Task("a @ b", "mm", {"n": 256}, env))
    assert (result.stmt, result.label, result.params, result.env) == ("a @ b", "mm", {"n": 256}, env)
    bare = CudaTimeResult(cold=Run(2.0, 2.0))
    assert (bare.stmt, bare.label, bare.params, bare.env) == (None, None, {}, None)
