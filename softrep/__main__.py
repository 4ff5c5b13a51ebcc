# softrep: no kernels
"""Command line: `python -m softrep <command>`.

Commands:
  example        a short tour: the same bits on every backend and rounding
  audit-ptx      compile every CUDA kernel to PTX (no GPU needed) and audit it
  verify         check a math function against an independent reference
  verify-formats check low-precision conversions and bfloat16 arithmetic
  demo           train a small CNN on the scikit-learn digits; check the published fingerprints
  audit          run a script under the op audit and print which ops are reproducible
  record         run a script and record every random value it draws
  replay         run a script, serving back the random values of a recording
"""

import argparse
import sys


def _example(args):
    import torch

    import softrep

    x = torch.tensor([1.0, 2.0, 3.0, 1e-45, -0.0], dtype=torch.float32)
    y = torch.tensor([3.0, 3.0, 0.0, 0.5, 0.0], dtype=torch.float32)
    print("x =", x.tolist())
    print("y =", y.tolist())
    for rounding in ("nearest", "down", "up", "zero"):
        q = softrep.div(x, y, rounding=rounding)
        print(f"div(x, y, rounding={rounding!r:10}) =", [f"{v:.9g}" for v in q.tolist()])
    s = softrep.add(x, torch.neg(x), rounding="down")
    print("add(x, -x, rounding='down')      =", s.tolist(), " (exact zero sums are -0 downward)")
    f = softrep.fma(torch.tensor([1 + 2**-23]), torch.tensor([1 - 2**-24]), torch.tensor([-1.0]))
    m = softrep.add(softrep.mul(torch.tensor([1 + 2**-23]), torch.tensor([1 - 2**-24])), torch.tensor([-1.0]))
    print(f"fma(a, b, c) = {f.item():.9g}, add(mul(a, b), c) = {m.item():.9g}  (one rounding vs two)")
    print("backend:", softrep.ops.backend.select(x), "| NaN bits:",
          hex(softrep.div(torch.zeros(1), torch.zeros(1)).view(torch.int32).item() & 0xFFFFFFFF))
    return 0


def _audit_ptx(args):
    import softrep  # noqa: F401
    from softrep.tools.progress import bar as progress_bar
    from softrep.cuda import audit

    names = sorted(audit.registered())
    if args.filter:
        names = [n for n in names if args.filter in n]
    bar = progress_bar(total=len(names) * len(audit.CCS), desc="PTX audit", unit="kernel")
    count, findings = audit.audit(names, progress=lambda name, cc: bar.update())
    bar.close()
    for finding in findings:
        print(finding)
    print(f"{count} compilations of {len(names)} kernels for "
          f"{', '.join(f'sm_{a}{b}' for a, b in audit.CCS)}: {len(findings)} findings")
    return 1 if findings else 0


# Commands that parse their own arguments: name -> (module, function(argv) -> exit code, help).
DELEGATED = {
    "verify": ("softrep.tools.verify", "main", "verify a correctly rounded math function"),
    "verify-formats": ("softrep.tools.verify_formats", "main", "verify low-precision conversions and arithmetic"),
    "demo": ("softrep.tools.demo", "main", "train a CNN on the digits data; check the reference fingerprints"),
    "audit": ("softrep.tools.dispatch.cli", "main", "run a script under the op audit"),
    "record": ("softrep.tools.recording.cli", "record_main", "run a script, recording its randomness"),
    "replay": ("softrep.tools.recording.cli", "replay_main", "run a script, replaying recorded randomness"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    # A delegated command gets every later argument untouched (its own --help
    # included, and a script's arguments after record/replay/audit).
    if argv and argv[0] in DELEGATED:
        import importlib

        module, attr, _ = DELEGATED[argv[0]]
        return getattr(importlib.import_module(module), attr)(argv[1:]) or 0
    parser = argparse.ArgumentParser(prog="python -m softrep",
                                     description="softrep's command line; `python -m softrep COMMAND --help` "
                                                 "describes each command.")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    sub.add_parser("example", help="a short tour of explicit rounding").set_defaults(func=_example)
    p = sub.add_parser("audit-ptx", help="audit the PTX of every CUDA kernel")
    p.add_argument("--filter", help="only kernels whose name contains this")
    p.set_defaults(func=_audit_ptx)
    for name, (_, _, text) in DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)  # listed in --help; run above
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
