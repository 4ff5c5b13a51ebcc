# softrep: no kernels
"""softrep.audit: which aten ops a model runs, and whether each is reproducible.

`audit(model_or_fn, *example_inputs, backward=None)` runs one step under
`AuditMode` (a TorchDispatchMode that records, and runs torch's own kernels)
and returns a `Report`.  The classification is that of softrep/tools/dispatch/ops.py.
"""

import contextlib
import json
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from . import ops
from . import sites

MAX_SITES = 3  # call sites shown per op in the table (all are kept in the data)


class Report:
    """The ops of one audited run.

    ``rows`` is a list of dicts, one per (op, class), in first-seen order:
    op (the aten overload, e.g. "aten.mm.default"), class (one of ops.CLASSES),
    reason, count, forward and backward (counts per phase), and sites
    (file:line -> count, in first-seen order).  ``notes`` are lines about the
    run itself (e.g. that there was no backward to audit).
    """

    def __init__(self, rows=None, notes=None):
        self.rows = list(rows or [])
        self.notes = list(notes or [])
        self._index = {(r["op"], r["class"]): r for r in self.rows}

    def record(self, op, cls, reason, phase, site):
        row = self._index.get((op, cls))
        if row is None:
            row = {"op": op, "class": cls, "reason": reason, "count": 0, "forward": 0, "backward": 0, "sites": {}}
            self._index[(op, cls)] = row
            self.rows.append(row)
        row["count"] += 1
        row[phase] += 1
        row["sites"][site] = row["sites"].get(site, 0) + 1

    @property
    def ok(self):
        """True iff no op of the run is classified not reproducible."""
        return not any(r["class"] == ops.NOT_REPRODUCIBLE for r in self.rows)

    def ops(self, cls=None):
        """{op name: class} (only the ops of class `cls` when given)."""
        return {r["op"]: r["class"] for r in self.rows if cls is None or r["class"] == cls}

    def count(self, op):
        return sum(r["count"] for r in self.rows if r["op"] == op)

    def not_reproducible(self):
        return [r for r in self.rows if r["class"] == ops.NOT_REPRODUCIBLE]

    def to_dict(self):
        return {"version": 1, "ok": self.ok, "ops": [dict(r, sites=dict(r["sites"])) for r in self.rows],
                "notes": list(self.notes)}

    def to_json(self, **kwargs):
        """The report as a JSON string (see docs/patching.md for the fields)."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        if data.get("version") != 1:
            raise ValueError(f"softrep.audit: unknown report version {data.get('version')!r}")
        return cls(data["ops"], data.get("notes"))

    def __eq__(self, other):
        return isinstance(other, Report) and self.to_dict() == other.to_dict()

    def __str__(self):
        order = {c: i for i, c in enumerate((ops.NOT_REPRODUCIBLE, ops.REPRODUCIBLE, ops.EXACT))}
        rows = sorted(self.rows, key=lambda r: (order[r["class"]], r["op"]))
        header = ("op", "count", "fwd", "bwd", "class", "first call sites")
        table = [header]
        for r in rows:
            shown = list(r["sites"])[:MAX_SITES]
            more = len(r["sites"]) - len(shown)
            where = "; ".join(shown) + (f"; +{more} more" if more > 0 else "")
            table.append((r["op"], str(r["count"]), str(r["forward"]), str(r["backward"]), r["class"], where))
        widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
        lines = []
        for k, row in enumerate(table):
            cells = [row[i].rjust(widths[i]) if i in (1, 2, 3) else row[i].ljust(widths[i]) for i in range(len(widths))]
            lines.append("  ".join(cells + [row[-1]]).rstrip())
            if k == 0:
                lines.append("  ".join("-" * w for w in widths) + "  " + "-" * len(header[-1]))
        bad = len(self.not_reproducible())
        total = sum(r["count"] for r in self.rows)
        if bad:
            lines.append("")
            lines.append("Not reproducible:")
            for r in self.not_reproducible():
                lines.append(f"  {r['op']}: {r['reason']}")
        lines.append("")
        lines.append(f"{len(self.rows)} distinct ops, {total} calls: " + (
            "all reproducible (through softrep or exact by IEEE)" if bad == 0
            else f"{bad} not reproducible"))
        lines.extend(self.notes)
        return "\n".join(lines)

    __repr__ = __str__


class AuditMode(TorchDispatchMode):
    """Records every aten op (with its class and call site) into `report`, then runs torch's kernel."""

    def __init__(self, report=None):
        super().__init__()
        self.report = Report() if report is None else report

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        cls, _, reason = ops.classify_call(func, args, kwargs)
        phase, site = sites.current_site()
        self.report.record(str(func), cls, reason, phase, site)
        return func(*args, **kwargs)


@contextlib.contextmanager
def forward_stacks():
    """torch's anomaly mode, for its one side effect we need: each autograd node
    keeps the Python stack of the forward op that created it (backward call sites)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
        with torch.autograd.set_detect_anomaly(True, check_nan=False):
            yield


NO_BACKWARD_NOTE = "No backward audited: no output requires grad."


def audit(model_or_fn, *example_inputs, backward=None):
    """Run `model_or_fn(*example_inputs)` once (and its backward) and report every aten op.

    The backward is that of the sum of the outputs: every floating output that
    requires grad gets a gradient of ones (passed in, so that no extra op is
    recorded).  When the model returns a 0-d loss this is the loss's backward.
    backward=None (the default) audits the backward when an output requires
    grad and otherwise says in the report (`notes`) that there was none;
    backward=True requires one (ValueError if no output requires grad);
    backward=False audits the forward only.
    Gradients accumulated into the parameters of an nn.Module by the audit are
    put back as they were.  Returns a `Report`.
    """
    if backward is not None and not isinstance(backward, bool):
        raise TypeError(f"softrep.audit: argument 'backward' must be None or a bool, got {type(backward).__name__}")
    if not callable(model_or_fn):
        raise TypeError(f"softrep.audit: argument 'model_or_fn' must be callable, got {type(model_or_fn).__name__}")
    params = list(model_or_fn.parameters()) if isinstance(model_or_fn, torch.nn.Module) else []
    saved_grads = [p.grad for p in params]
    report = Report()
    try:
        with forward_stacks() if backward is not False else contextlib.nullcontext():
            with AuditMode(report):
                out = model_or_fn(*example_inputs)
            outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.requires_grad
                    and (t.is_floating_point() or t.is_complex())]
            if backward and not outs:
                raise ValueError("softrep.audit: backward=True but no output requires grad "
                                 "(give inputs or parameters with requires_grad=True, or backward=None)")
            if backward is None and not outs:
                report.notes.append(NO_BACKWARD_NOTE)
            if backward is not False and outs:
                ones = [torch.ones_like(t) for t in outs]
                with AuditMode(report):
                    torch.autograd.backward(outs, ones)
    finally:
        for p, g in zip(params, saved_grads):
            p.grad = g
    return report
