"""``--strict-gpu``: a skipped ``gpu`` test fails, so a GPU check cannot pass by testing nothing.

A pytest plugin (tests/conftest.py loads it). Without the option, ``gpu`` tests skip where
there is no device, as everywhere else. With it (scripts/gpu-check on the GPU machine), a
skip of a ``gpu`` test is reported as a failure with the skip's reason, except for tests
marked ``multi_gpu``, which need a second device that one-GPU machines do not have.
"""

import pytest


def pytest_addoption(parser):
    parser.addoption("--strict-gpu", action="store_true",
                     help="fail any skipped gpu-marked test (the GPU machine's check)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and item.config.getoption("strict_gpu")):
        return
    if item.get_closest_marker("gpu") is None or item.get_closest_marker("multi_gpu") is not None:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    report.outcome = "failed"
    report.longrepr = f"--strict-gpu: a gpu test skipped ({reason})"


def pytest_sessionfinish(session, exitstatus):
    """With --strict-gpu, selecting no test at all is a failure too."""
    if session.config.getoption("strict_gpu") and session.testscollected == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
