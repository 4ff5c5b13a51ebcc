# softrep: no kernels
"""`softrep.record(path)` and `softrep.replay(path)`: the two sessions the hooks report to."""

import os
import platform
import sys
import threading
import warnings

import numpy as np
import torch

from . import hooks
from . import logfile
from .logfile import KEY_FIELDS, ReplayLogError


STR_HASH_PROBE = "softrep-replay"  # hash() of it tells whether two processes hash strings alike


class ReplayDivergenceError(RuntimeError):
    """The replayed program consumes randomness differently from the recording.

    Attributes: `index` (the number of the first differing randomness event,
    counting from 0), `recorded` and `current` (the two events as dicts with
    src, gen, site, n, state, seed; None for "no more events")."""

    def __init__(self, log, index, recorded, current, total):
        self.log, self.index, self.recorded, self.current = log, index, recorded, current
        super().__init__(
            f"softrep.replay: the program consumes randomness differently from the recording "
            f"'{log}', at randomness event #{index}:\n"
            f"  recorded: {_describe(recorded, f'nothing (the recording ends after {total} events)')}\n"
            f"  current:  {_describe(current, f'nothing (the program stopped after {index} events)')}"
            f"{_hint(recorded, current)}")


def _describe(event, nothing):
    if event is None:
        return nothing
    text = event["src"]
    if event.get("gen") is not None:
        text += f" [generator #{event['gen']}]"
    text += f" at {event['site']}"
    if event.get("n"):
        text += f", amount {event['n']}"
    if event.get("seed") is not None:
        text += f", seed {event['seed']}"
    if event.get("state") is not None:
        text += f", state at first use {event['state']}"
    return text


def _hint(recorded, current):
    if recorded is None or current is None:
        return "\n  (the two runs draw a different number of times)"
    same = {k for k in KEY_FIELDS if recorded.get(k) == current.get(k)}
    if same >= {"src", "gen", "site", "n", "seed"}:
        return ("\n  (the generator was in a different state at its first use: it was seeded or advanced by "
                "something the recording does not capture, e.g. torch.Generator.seed(), a seed read from the "
                "clock, or draws made before the recording started)")
    if same >= {"src", "gen", "site", "n"}:
        return "\n  (the same call was seeded with a different value, e.g. a seed read from the clock)"
    return ""


def _header():
    from ..version import __version__

    return {
        "softrep": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "platform": platform.platform(),
        "argv": list(sys.argv),
        "hash_seed": os.environ.get("PYTHONHASHSEED"),
        "str_hash": hash(STR_HASH_PROBE),
        "states": hooks.snapshot_states(),
    }


class _Session:
    verb = ""

    def __init__(self, path):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"softrep.{self.verb}: argument 'path' must be a str or os.PathLike, "
                            f"got {type(path).__name__}")
        self.path = os.fspath(path)
        self._lock = threading.RLock()
        self._patches = None
        self.total = 0  # events so far

    def _start(self):
        self.sites = hooks.Sites()
        self._generators = {}  # id -> (ordinal, object): the object is kept alive so ids are not reused
        self._patches = hooks.install(self)

    def _stop(self):
        patches, self._patches = self._patches, None
        if patches is not None:
            patches.restore()

    def generator(self, obj, state_fn):
        """(ordinal, digest of the state) of a generator object; the digest only
        at its first use in the session (None after, and None when state_fn is None)."""
        with self._lock:
            entry = self._generators.get(id(obj))
            if entry is not None and entry[1] is obj:
                return entry[0], None
            ordinal = len(self._generators)
            self._generators[id(obj)] = (ordinal, obj)
        with hooks.inside:
            return ordinal, (hooks.digest(state_fn()) if state_fn is not None else None)


class record(_Session):
    """Record every source of randomness the code inside the block consumes.

        with softrep.record("run.softrep-replay"):
            main()

    The log (docs/replay.md) is written when the block exits, also when it
    exits with an exception.  Every patched function is restored on exit."""

    verb = "record"

    def __enter__(self):
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            # Fail before the program runs, not after a long run with nowhere to write.
            raise FileNotFoundError(f"softrep.record: the directory of the log '{self.path}' does not exist")
        header = _header()
        self.events = []
        self._start()
        self._header = header
        return self

    def __exit__(self, exc_type, exc, tb):
        self._stop()
        status = "ok" if exc_type is None else f"exception {exc_type.__name__}"
        if exc_type is SystemExit:
            status = f"exit {exc.code!r}"
        logfile.write(self.path, self._header, self.events, status)
        return False

    def consume(self, event):
        with self._lock:
            last = self.events[-1] if self.events else None
            if last is not None and "data" not in last and all(last.get(k) == event.get(k) for k in KEY_FIELDS):
                last["rep"] = last.get("rep", 1) + 1
            else:
                stored = {k: v for k, v in event.items() if v is not None}
                stored["i"] = self.total
                self.events.append(stored)
            self.total += 1

    def entropy(self, src, site, n, draw):
        data = draw(n)
        with self._lock:
            self.events.append({"i": self.total, "src": src, "site": site, "n": n, "data": data.hex()})
            self.total += 1
        return data


class replay(_Session):
    """Run the block with the randomness of a recording.

        with softrep.replay("run.softrep-replay"):
            main()

    Raises ReplayLogError if the log is missing or invalid (before anything
    runs) and ReplayDivergenceError at the first randomness event that differs
    from the recording (or on exit, if the block drew fewer times)."""

    verb = "replay"

    def __enter__(self):
        self.header, self.events, self.trailer = logfile.read(self.path)
        self._recorded_total = self.trailer["events"]
        self._run, self._used = 0, 0
        self.failure = None
        for name, version in (("python", platform.python_version()), ("numpy", np.__version__),
                              ("torch", torch.__version__)):
            if self.header.get(name) != version:
                warnings.warn(f"softrep.replay: '{self.path}' was recorded with {name} {self.header.get(name)}, "
                              f"this is {name} {version}: generators may differ between versions "
                              f"(a difference in draws is still detected; one in values is not)",
                              RuntimeWarning, stacklevel=2)
        if self.header.get("str_hash") != hash(STR_HASH_PROBE):
            warnings.warn(f"softrep.replay: this process hashes strings differently from the recording "
                          f"(recorded with PYTHONHASHSEED={self.header.get('hash_seed')}): the iteration order of "
                          f"sets and dicts of strings may differ; `python -m softrep replay` fixes it",
                          RuntimeWarning, stacklevel=2)
        try:
            notes = hooks.restore_states(self.header["states"])
        except (KeyError, TypeError, ValueError) as e:
            raise ReplayLogError(f"softrep.replay: '{self.path}': bad generator states in the header: {e!r}") from None
        for note in notes:
            warnings.warn(f"softrep.replay: {note}", RuntimeWarning, stacklevel=2)
        self._start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._stop()
        if exc_type is not None:
            return False  # the block's own exception (a divergence included) propagates
        if self.failure is not None:
            raise self.failure  # the block caught a divergence error: do not let it pass silently
        if self.total != self._recorded_total:
            recorded = self.events[self._run] if self._used < self.events[self._run].get("rep", 1) \
                else self.events[self._run + 1]
            raise ReplayDivergenceError(self.path, self.total, _public(recorded), None, self._recorded_total)
        return False

    def _next(self, event):
        with self._lock:
            if self.failure is not None:
                raise self.failure
            if self._run < len(self.events) and self._used == self.events[self._run].get("rep", 1):
                self._run, self._used = self._run + 1, 0
            recorded = self.events[self._run] if self._run < len(self.events) else None
            if recorded is None or any(recorded.get(k) != event.get(k) for k in KEY_FIELDS):
                self.failure = ReplayDivergenceError(self.path, self.total, _public(recorded), event,
                                                     self._recorded_total)
                raise self.failure
            self._used += 1
            self.total += 1
            return recorded

    def consume(self, event):
        self._next(event)

    def entropy(self, src, site, n, draw):
        recorded = self._next({"src": src, "site": site, "n": n, "gen": None, "state": None, "seed": None})
        return bytes.fromhex(recorded["data"])


def _public(event):
    if event is None:
        return None
    return {k: event.get(k) for k in KEY_FIELDS}
