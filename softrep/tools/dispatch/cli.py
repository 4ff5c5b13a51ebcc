# softrep: no kernels
"""`python -m softrep audit [--json FILE] script.py args...`

Runs the script as `python script.py args...` would (run as __main__, with
sys.argv = [script.py, args...] and the script's folder first on sys.path)
under softrep's op audit, prints the table, and exits with 0 if every op was
reproducible, 1 otherwise.  The script does its own backward passes; their ops
are attributed to the forward lines that created them.
"""

import argparse
import os
import runpy
import sys
import traceback

from .audit import AuditMode, Report, forward_stacks


def run_script(path, args):
    """Run `path` as __main__ with `args` under the audit; returns (report, exit status)."""
    report = Report()
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *args]
    script_dir = os.path.dirname(os.path.abspath(path))
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    status = 0
    try:
        with forward_stacks(), AuditMode(report):
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:  # the ops up to the failure are still worth showing
                traceback.print_exc()
                status = 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    return report, status


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m softrep audit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isfile(ns.script):
        parser.error(f"argument 'script': no such file {ns.script!r}")
    report, status = run_script(ns.script, ns.args)
    print(report)
    if ns.json:
        with open(ns.json, "w") as f:
            f.write(report.to_json(indent=1))
    if status:
        print(f"(the script exited with status {status}; the table shows the ops up to its end)")
    return 0 if report.ok and not status else 1
