# softrep: no kernels
"""Command line: `python -m softrep <command>`.

Commands:
  example        a short tour: the same bits on every backend and rounding
  audit-kernels  compile every CPU and CUDA kernel (no GPU needed) and audit it
  audit-ptx      the CUDA half of audit-kernels
  verify         check a math function against an independent reference
  verify-formats check low-precision conversions and bfloat16 arithmetic
  verify-lowp    check the math functions on bfloat16/float16 tensors against MPFR
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


def _audit_kernels(args):
    from softrep.tools import kernel_audit
    from softrep.tools.progress import bar as progress_bar

    targets = kernel_audit.TARGETS if args.target == "all" else (args.target,)
    ccs = tuple(args.cc) if args.cc else kernel_audit.CCS
    try:
        kernels = kernel_audit.load_kernels(targets)
    except ImportError as exc:  # CUDA kernels without the cuda extra: the message names it
        print(f"{exc}\n(--target cpu audits the CPU kernels without it)", file=sys.stderr)
        return 2
    names = {name for target in targets for name in kernels[target] if not args.filter or args.filter in name}
    total = sum(1 for target in targets for name in kernels[target] if name in names)
    bar = progress_bar(total=total, desc="kernel audit", unit="kernel")
    count, findings = kernel_audit.audit(targets, names, ccs, progress=lambda target, name: bar.update())
    bar.close()
    for finding in findings:
        print(finding)
    where = ["the CPU"] if "cpu" in targets else []
    if "cuda" in targets:
        where.append("CUDA " + ", ".join(f"sm_{a}{b}" for a, b in ccs))
    print(f"{count} compilations of {total} kernels for {' and '.join(where)}: {len(findings)} findings")
    return 1 if findings else 0


def _compute_capability(text):
    try:
        major, minor = (int(part) for part in text.split("."))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MAJOR.MINOR such as 8.0, got {text!r}") from None
    return major, minor


# Commands that parse their own arguments: name -> (module, function(argv) -> exit code, help).
DELEGATED = {
    "verify": ("softrep.tools.verify", "main", "verify a correctly rounded math function"),
    "verify-formats": ("softrep.tools.verify_formats", "main", "verify low-precision conversions and arithmetic"),
    "verify-lowp": ("softrep.tools.verify_lowp", "main", "the math functions on bfloat16/float16 vs MPFR"),
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
    for command, text in (("audit-kernels", "audit every CPU and CUDA kernel (docs/audit.md)"),
                          ("audit-ptx", "audit every CUDA kernel (audit-kernels --target cuda)")):
        p = sub.add_parser(command, help=text)
        if command == "audit-kernels":
            p.add_argument("--target", choices=("all", "cpu", "cuda"), default="all",
                           help="which kernels to audit (default: all)")
        else:
            p.set_defaults(target="cuda")
        p.add_argument("--filter", help="only kernels whose name contains this")
        p.add_argument("--cc", type=_compute_capability, action="append",
                       help="CUDA compute capability to compile for, such as 8.0 (repeatable; "
                            "default: 7.5, 8.0 and 9.0)")
        p.set_defaults(func=_audit_kernels)
    for name, (_, _, text) in DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)  # listed in --help; run above
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
