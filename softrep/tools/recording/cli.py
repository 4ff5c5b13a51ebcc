# softrep: no kernels
"""`python -m softrep record|replay --log FILE script.py args...`

The script runs as `python script.py args...` would run it: as module
`__main__`, with sys.argv = [script.py, args...], sys.path[0] = the script's
directory, and the working directory unchanged.  The exit code is the script's.
`record` fixes PYTHONHASHSEED (a random value, kept in the log, unless it is
already set) and `replay` uses the recorded one.
"""

import argparse
import os
import runpy
import sys

from . import logfile
from .logfile import ReplayLogError
from .session import ReplayDivergenceError, record, replay

DIVERGED = 3  # exit code when a replay diverges or its log is unusable


def _parser(command, text):
    parser = argparse.ArgumentParser(prog=f"python -m softrep {command}", description=text)
    parser.add_argument("--log", required=True, metavar="FILE", help="the replay log (docs/replay.md)")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return parser


def _exit_code(code):
    """The process exit code `sys.exit(code)` gives, as Python computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run(session, script, args):
    if not os.path.isfile(script):
        print(f"python -m softrep: can't open file '{script}': no such file", file=sys.stderr)
        return 2
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script] + list(args)
    script_dir = os.path.dirname(os.path.abspath(script))
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    try:
        with session:
            runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as e:
        return _exit_code(e.code)
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path and sys.path[0] == script_dir:
            sys.path[0] = saved_path0


def _with_hash_seed(command, argv, hash_seed):
    """Re-run this command with PYTHONHASHSEED=hash_seed, when it was started as
    `python -m softrep` (not when called from Python) and the seed differs.

    String hashing is randomized per process: the iteration order of sets and
    dicts of strings is a source of randomness that only the interpreter's
    start-up can fix.  os.execve replaces this process: same pid, same
    standard streams, and the exit code is the new one's."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if os.environ.get("PYTHONHASHSEED") == hash_seed or getattr(spec, "name", None) != "softrep.__main__":
        return
    flags = sys.orig_argv[1:sys.orig_argv.index("-m")] if "-m" in sys.orig_argv else []
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *flags, "-m", "softrep", command, *argv], env)


def record_main(argv):
    args = _parser("record", "Run a script, recording every source of randomness it consumes.").parse_args(argv)
    if "PYTHONHASHSEED" not in os.environ:
        # 1 + a random 32-bit value below 2**32 - 1 (0 would switch randomization off).
        _with_hash_seed("record", argv, str(1 + int.from_bytes(os.urandom(4), "little") % 4294967295))
    return _run(record(args.log), args.script, args.args)


def replay_main(argv):
    args = _parser("replay", "Run a script, serving back the randomness of a recording.").parse_args(argv)
    try:
        header, _, _ = logfile.read(args.log)
        if header.get("hash_seed") is not None:
            _with_hash_seed("replay", argv, header["hash_seed"])
        return _run(replay(args.log), args.script, args.args)
    except (ReplayDivergenceError, ReplayLogError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return DIVERGED
