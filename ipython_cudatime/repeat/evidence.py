"""What the cold run changed, and whether a second run changes it again: the evidence that decides
whether a cell may repeat.

The cold run happens anyway; it is the evidence. Before it, a fingerprint of everything the cell
can reach (``fingerprint.Fingerprint``); after it, the same objects are read again:

- nothing changed (outside the names the cell binds, which are put back between runs): the
  cell repeats;
- what changed can be put back: its state after the cold run is kept, and the first later run
  is the probe. A probe that leaves it as the cold run left it (the same values written again:
  ``np.matmul(a, b, out=c)``, ``results['mm'] = a @ b``) lets the cell repeat; one that changes
  it again is undone, and the repeats stop;
- what changed cannot be put back (a generator advanced, a file's position), or something could
  not be read at all: the cell runs once. Unknown is never safe.

After the later runs the objects are read once more, so that a change the probe did not show
(a cell that acts only on its fifth run) is put back where it can be and said where it cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..backends.objects import Kind
from .fingerprint import Budget, Entry, Fingerprint

Roots = Callable[[], list[tuple[str, Any]]]
SHOWN = 4  # changed objects named in one sentence, at most
UNVERSIONED_BYTES = 64 << 20  # unchanged tensors copied in case their version counter missed a write


def _listed(phrases: list[str]) -> str:
    """"a, b and 2 more"; a name seen both as the cell's and as a function's global once, as the global."""
    readers = {phrase.partition(" (a global of ")[0] for phrase in phrases if " (a global of " in phrase}
    phrases = [phrase for phrase in dict.fromkeys(phrases) if phrase.partition(":")[0] not in readers]
    shown, more = phrases[:SHOWN], len(phrases) - SHOWN
    if more > 0:
        return ", ".join(shown) + f" and {more} more"
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else "".join(shown)


def _grad_hint(paths: Iterable[str]) -> str:
    """How to time a backward pass repeatedly, when a gradient is among what changed."""
    if any(".grad" in path for path in paths):
        return ("; to time backward() repeatedly, zero the gradients in the cell (model.zero_grad() or "
                "optimizer.zero_grad()) or force runs with -n")
    return ""


class Evidence:
    """The fingerprints of one cell's reach around its runs (see the module's doc).

    ``roots()`` gives the (name, value) pairs to walk from; ``kinds`` the frameworks' kinds;
    ``deep`` False when the cell's code is proven pure (``repeat_rule.proven_pure``); ``skip``
    the objects that are not the user's data.
    ``before()`` comes before the cold run; ``after_cold()`` gives why the cell must run once
    (no sentence: it may repeat) and sets ``probing``; ``probe(undo)`` after the first later run
    gives what it changed again; ``settle(undo)`` after the last.
    """

    def __init__(self, roots: Roots, kinds: Iterable[Kind] = (), deep: bool = True,
                 budget: Budget | None = None, skip: Iterable[Any] = ()) -> None:
        self.roots, self.kinds, self.deep, self.budget = roots, tuple(kinds), deep, budget
        self.skip = tuple(skip)
        self.probing = False
        self.cold: list[str] = []  # what the cold run changed, as the report names it
        self._saved: dict[int, Any] = {}

    def _take(self) -> Fingerprint:
        """A fingerprint of the roots; one that failed (a fault of ours, never the user's) is all unseen."""
        fingerprint = Fingerprint(self.kinds, self.deep, self.budget, self.skip)
        try:
            return fingerprint.take(self.roots())
        except Exception as exc:
            fingerprint.unseen.append(f"what the cell reaches (the check failed: {type(exc).__name__})")
            return fingerprint

    def before(self) -> None:
        self.first = self.baseline = self._take()

    def after_cold(self) -> list[str]:
        first = self.first
        if first.unseen:
            return [f"{_listed(first.unseen)} could not be checked"]
        changed = first.changed()
        if not changed:
            return []
        self.cold = [phrase for entry in changed for phrase in first.what_changed(entry, entry.token)]
        self.baseline = base = self._take()
        if base.unseen:
            return [f"the first run changed {_listed(self.cold)}, and {_listed(base.unseen)} could not be checked"]
        touched = {id(entry.obj) for entry in changed}
        fresh = [entry for entry in base.entries.values()
                 if id(entry.obj) in touched or id(entry.obj) not in first.entries]
        self._saved, lost = base.copies(fresh)
        if lost:
            self._saved = {}  # copies that would only hold memory
            paths = [base.path(entry) for entry in lost]
            return [f"the first run changed {_listed(paths)}, which cannot be put back"]
        self._saved.update(base.copies(self._unversioned(base, fresh))[0])
        self.probing = True
        return []

    def _unversioned(self, base: Fingerprint, fresh: list[Entry]) -> list[Entry]:
        """The other objects whose token may miss a write (a tensor's version counter misses what a
        kernel writes into its own arguments: BatchNorm's running mean), smallest first, up to
        ``UNVERSIONED_BYTES``: copied too, so that such a change is still seen and undone."""
        seen = {id(entry.obj) for entry in fresh}
        others = sorted((entry for entry in base.entries.values()
                         if not (entry.kind.holds_state or entry.kind.costly or id(entry.obj) in seen)),
                        key=lambda entry: int(getattr(entry.obj, "nbytes", 0) or 0))
        found, size = [], 0
        for entry in others:
            size += int(getattr(entry.obj, "nbytes", 0) or 0)
            if size > UNVERSIONED_BYTES:
                break
            found.append(entry)
        return found

    def _state(self, entry: Entry) -> Any:
        """What puts ``entry`` back as the cold run left it, or None."""
        saved = self._saved.get(id(entry.obj))
        return entry.token if saved is None and entry.kind.holds_state else saved

    def _differing(self) -> list[Entry]:
        """The baseline's entries whose object holds other values now than after the cold run."""
        base = self.baseline
        suspects = {id(entry.obj): entry for entry in base.changed()}
        suspects.update((key, base.entries[key]) for key in self._saved if key in base.entries)
        return [entry for entry in suspects.values()
                if (state := self._state(entry)) is None or not base.matches(entry, state)]

    def _what(self, entries: list[Entry]) -> list[str]:
        """What differs in ``entries`` since the cold run, as the report names it."""
        return [phrase for entry in entries for phrase in self.baseline.what_changed(entry, entry.token)]

    def _undo(self, entries: list[Entry]) -> list[Entry]:
        """Put ``entries`` back as the cold run left them; the ones that could not be."""
        base = self.baseline
        return [entry for entry in entries
                if (state := self._state(entry)) is None or not base.restore(entry, state)]

    def probe(self, undo: bool) -> list[str]:
        """After the first later run: what it changed again (nothing: the cold run's changes were an
        idempotent overwrite), put back when ``undo``; as one sentence, or none."""
        self.probing = False
        again = self._differing()
        if not again:
            return []
        paths = self._what(again)
        kept = self._undo(again) if undo else []
        put_back = ""
        if undo:
            but = f", except {_listed([self.baseline.path(entry) for entry in kept])}" if kept else ""
            put_back = f" (put back as the first run left it{but})"
        return [f"the first run changed {_listed(self.cold)}, and a second run changed {_listed(paths)} again"
                f"{put_back}{_grad_hint(paths)}"]

    def settle(self, undo: bool) -> list[str]:
        """After the later runs: what they changed that the cold run did not leave so, put back
        where it can be when ``undo``; as one sentence, or none."""
        later = self._differing()
        if not later:
            return []
        paths = self._what(later)
        kept = self._undo(later) if undo else later
        if not kept:
            return [f"Later runs changed {_listed(paths)}, which the first run left alone: put back as the "
                    "first run left it."]
        return [f"Later runs changed {_listed(paths)}, which the first run left alone; "
                f"{_listed([self.baseline.path(entry) for entry in kept])} could not be put back and "
                "reflect all the runs."]
