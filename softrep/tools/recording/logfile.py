# softrep: no kernels
"""The replay log file format, version 1 (specified in docs/replay.md).

A log is UTF-8 text, one item per line ("\\n" line ends):

    line 1          the magic line  `softrep-replay <version>`   (e.g. `softrep-replay 1`)
    line 2          the header: one JSON object (versions, argv, generator states at the start)
    lines 3..k      the events: one JSON object per run of identical consumption events,
                    or per entropy event, in the order the program consumed them
    last line       the trailer: {"end": {"events": E, "runs": R, "status": S, "sha256": H}}

H is the SHA-256 (hex) of every byte of the file before the trailer line, so a
log that was truncated or edited is refused instead of silently replayed.
"""

import hashlib
import json
import os

MAGIC = "softrep-replay"
VERSION = 1

# The fields of an event (docs/replay.md, "Events").  Two consumption events are
# the same event when all of KEY_FIELDS agree; a run of identical consecutive
# consumption events is stored once with "rep" = its length.
KEY_FIELDS = ("src", "gen", "site", "n", "state", "seed")


class ReplayLogError(ValueError):
    """The replay log is missing, not a softrep replay log, of an unsupported
    version, truncated or corrupted."""


def _dumps(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, allow_nan=False)


def write(path, header, events, status):
    """Write a log atomically (a temporary file next to `path`, then a rename)."""
    lines = [f"{MAGIC} {VERSION}\n", _dumps(header) + "\n"]
    lines += [_dumps(event) + "\n" for event in events]
    body = "".join(lines).encode("utf-8")
    total = sum(event.get("rep", 1) for event in events)
    trailer = {"end": {"events": total, "runs": len(events), "status": status,
                       "sha256": hashlib.sha256(body).hexdigest()}}
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(body)
        f.write((_dumps(trailer) + "\n").encode("utf-8"))
    os.replace(tmp, path)


def read(path):
    """(header, events, trailer) of the log at `path`; ReplayLogError if it is not a valid log."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError as e:
        raise ReplayLogError(f"softrep.replay: no replay log at '{path}' (record one first with "
                             f"softrep.record or `python -m softrep record --log {path} script.py`)") from e
    except OSError as e:
        raise ReplayLogError(f"softrep.replay: cannot read the replay log '{path}': {e}") from e

    first, _, _ = data.partition(b"\n")
    parts = first.split(b" ")
    if len(parts) != 2 or parts[0] != MAGIC.encode():
        raise ReplayLogError(f"softrep.replay: '{path}' is not a softrep replay log: its first line is "
                             f"{first[:60]!r}, expected {f'{MAGIC} {VERSION}'!r}")
    try:
        version = int(parts[1])
    except ValueError:
        raise ReplayLogError(f"softrep.replay: '{path}': bad format version {parts[1][:20]!r} "
                             f"in the first line") from None
    if version != VERSION:
        raise ReplayLogError(f"softrep.replay: '{path}' uses replay log format version {version}; "
                             f"this softrep reads version {VERSION} only")

    if not data.endswith(b"\n"):
        raise ReplayLogError(f"softrep.replay: '{path}' is truncated (it does not end with a complete line)")
    body_end = data.rstrip(b"\n").rfind(b"\n") + 1
    body, last = data[:body_end], data[body_end:]
    try:
        trailer = json.loads(last)["end"]
        expected_hash = trailer["sha256"]
    except (ValueError, KeyError, TypeError):
        raise ReplayLogError(f"softrep.replay: '{path}' is truncated or corrupted: its last line is "
                             f"not the end line") from None
    if hashlib.sha256(body).hexdigest() != expected_hash:
        raise ReplayLogError(f"softrep.replay: '{path}' is corrupted: its SHA-256 does not match "
                             f"the one in its end line")

    lines = body.decode("utf-8").split("\n")[1:-1]
    try:
        header = json.loads(lines[0])
        events = [json.loads(line) for line in lines[1:]]
    except (ValueError, IndexError) as e:
        raise ReplayLogError(f"softrep.replay: '{path}' is corrupted: {e}") from None
    if len(events) != trailer.get("runs") or sum(e.get("rep", 1) for e in events) != trailer.get("events"):
        raise ReplayLogError(f"softrep.replay: '{path}' is corrupted: the event count does not match its end line")
    return header, events, trailer
