"""The CPU facts of every call (its record, ``CpuContext``, read three times per call by ``CpuWatch``)
and why its warm runs were noisy or slow: its words read the noise check on those facts (``noise.judged``),
worked out once per result for all of them. Always on."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...measure.runner import Watch
from ...render.report import sentence_html
from ...results.result import CudaTimeResult, Finding
from ..feature import Call, Feature
from .context import CPU_CONTEXT, CpuContext, CpuWatch, pools_text
from .noise import Noise, context_rows, judged

LOAD_GAP = 1.0  # load averages this far apart (in cores' worth of work) are a difference worth naming


class CpuFacts(Feature):
    name = "cpu_context"
    schema = staticmethod(CPU_CONTEXT)
    record_checks = ((CpuContext, CPU_CONTEXT),)
    section_title = "Why the warm runs vary"
    section_class = "cudatime-section-noise"
    columns = ("noise",)
    beside_verdict = True
    every_round = True  # an --interleave point's facts are all its rounds' (``merged``)

    def watch(self, settings: bool, call: Call) -> Watch | None:
        return CpuWatch(call.machine, call.clock) if call.machine is not None and call.clock is not None else None

    def judge(self, result: CudaTimeResult, record: CpuContext | None) -> Noise:
        return judged(result, record)

    def text_lines(self, result: CudaTimeResult, record: Noise | None) -> list[str]:
        """What --threads N set, as the warm runs saw it: ``threads  : --threads 1: torch 1, openblas 1``."""
        if result.task is None or result.task.threads is None:
            return []
        context = record.context if record is not None else None
        pools = pools_text(context.threads) if context is not None else "not read"
        return [f"threads  : --threads {result.task.threads}: {pools}"]

    def findings(self, result: CudaTimeResult, record: Noise | None) -> list[Finding]:
        """The noise warning, one line with its cause and fix, then the cause's full reasoning: a ``reason``,
        which the HTML report puts in this feature's section."""
        if record is None or record.warning is None or record.cause is None:  # both, or neither
            return []
        cause = record.cause
        return [Finding(cause.symptom, record.warning), Finding(f"noise-{cause.kind}", cause.text, reason=True)]

    def section_html(self, result: CudaTimeResult, record: Noise | None) -> str:
        if record is None or record.cause is None:
            return ""
        return f"<div>{sentence_html(record.cause.text)}</div>"

    def detail_rows(self, result: CudaTimeResult, record: Noise | None) -> list[tuple[str, str]]:
        if record is None:
            return []
        return [*([("spread", record.quiet)] if record.quiet is not None else []), *context_rows(record.context)]

    def cells(self, record: Noise | None) -> tuple[str, ...]:
        """The noise cell: "noisy: oversubscribed", "slowed: loaded", "noisy: cause unknown", or "" for steady runs."""
        cause = record.cause if record is not None else None
        if cause is None:
            return ("",)
        symptom = "noisy" if cause.symptom == "noisy" else "slowed"
        return (f"{symptom}: {'cause unknown' if cause.kind == 'unknown' else cause.kind}",)

    def table_notes(self, rows: list[tuple[str, CudaTimeResult, Noise | None]], what: str) -> list[str]:
        """Each cause found once, in full, with the rows it was found at ("all 8 points" where it was found
        at every one of three or more rows with warm runs); the numbers in its sentence are the first such
        row's ("numbers from n=256")."""
        found: dict[tuple[str, str | None], tuple[str, list[str]]] = {}  # (kind, pool blamed) -> (text, rows)
        timed = sum(result.runs > 0 for _, result, _ in rows)
        for name, _, noise in rows:
            if noise is not None and (cause := noise.cause) is not None:
                found.setdefault((cause.kind, cause.pool), (cause.text, []))[1].append(name)
        return [f"{f'all {timed} {what}' if len(where) == timed > 2 else ', '.join(where)}"
                f"{f' (numbers from {where[0]})' if len(where) > 1 else ''}: {text}" for text, where in found.values()]

    def table_fields(self, record: Noise | None) -> dict[str, Any]:
        """``noise``: the noise check's cause ("oversubscribed", "loaded", "varies", "unknown") where
        the warm runs were noisy or slowed, else None."""
        cause = record.cause if record is not None else None
        return {"noise": cause.kind if cause is not None else None}

    def differences(self, first: CpuContext | None, second: CpuContext | None) -> list[str]:
        """Different thread pools (what each saw during the warm runs), and loads ``LOAD_GAP`` apart
        where both were read: ``load 0.30 vs 6.70 on 2 cores``."""
        if first is None or second is None:
            return []
        found = ([f"thread pools {pools_text(first.threads)} vs {pools_text(second.threads)}"]
                 if first.threads != second.threads else [])
        loads = first.load_before, second.load_before
        if loads[0] is not None and loads[1] is not None and abs(loads[0] - loads[1]) >= LOAD_GAP:
            cores = f"{first.cores} cores" if first.cores == second.cores else f"{first.cores} and {second.cores} cores"
            found.append(f"load {loads[0]:.2f} vs {loads[1]:.2f} on {cores}")
        return found

    def merged(self, records: list[CpuContext | None]) -> CpuContext | None:
        """One context for warm runs read in several spans (an interleaved sweep's rounds): the first
        span's load, pools and frameworks, the last one's load after, and the CPU time, wall time, waits
        and switches of all of them added up (None where a span did not say)."""
        known = [context for context in records if context is not None]
        if not known:
            return None
        waited, preempted = [c.waited for c in known], [c.preempted for c in known]
        return dataclasses.replace(
            known[0], load_after=known[-1].load_after, cpu=sum(c.cpu for c in known), wall=sum(c.wall for c in known),
            waited=None if None in waited else sum(w for w in waited if w is not None),
            preempted=None if None in preempted else sum(p for p in preempted if p is not None))
