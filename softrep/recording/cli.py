# softrep: no kernels
"""`python -m softrep record|replay --log FILE script.py args...`

The script runs as `python script.py args...` would run it: as module
`__main__`, with sys.argv = [script.py, args...], sys.path[0] = the script's
directory, and the working directory unchanged.  The exit code is the script's.
"""

import argparse
import os
import runpy
import sys

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


def record_main(argv):
    args = _parser("record", "Run a script, recording every source of randomness it consumes.").parse_args(argv)
    return _run(record(args.log), args.script, args.args)


def replay_main(argv):
    args = _parser("replay", "Run a script, serving back the randomness of a recording.").parse_args(argv)
    try:
        return _run(replay(args.log), args.script, args.args)
    except (ReplayDivergenceError, ReplayLogError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return DIVERGED
