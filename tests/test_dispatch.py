# softrep: no kernels
"""softrep.audit, softrep.reproducible, softrep.patch and `python -m softrep audit`.

References are independent of the dispatch layer: expected op sets written out
by hand from torch's autograd formulas, sequential float32 folds with numpy
scalars, and the pure softrep API (whose own tests check it against MPFR)."""

import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import softrep
from softrep.tools.dispatch import EXACT, NOT_REPRODUCIBLE, REPRODUCIBLE, NotReproducibleError, Report, cli, ops
from softrep.tools.dispatch.mode import NotReproducibleWarning

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "data" / "dispatch" / "mlp_step.py"
THIS = os.path.basename(__file__)


def _bits(t):
    return t.detach().contiguous().view(torch.int32 if t.dtype == torch.float32 else torch.int64)


def assert_same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(_bits(a), _bits(b)), (a, b)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))


# --------------------------------------------------------------------------- audit


def test_audit_mlp_lists_exactly_the_expected_ops():
    model = _mlp()
    report = softrep.audit(model, torch.ones(2, 4))
    # forward: t + addmm per Linear, relu; backward of the sum (gradient of ones given):
    # per Linear grad_weight = mm (+ t), grad_bias = sum over rows (+ view); the hidden
    # gradient = mm for the second Linear only (the input needs no gradient);
    # relu's backward is threshold_backward; AccumulateGrad detaches.
    assert report.ops() == {
        "aten.t.default": EXACT,
        "aten.addmm.default": REPRODUCIBLE,
        "aten.relu.default": EXACT,
        "aten.detach.default": EXACT,
        "aten.mm.default": REPRODUCIBLE,
        "aten.sum.dim_IntList": REPRODUCIBLE,
        "aten.view.default": EXACT,
        "aten.threshold_backward.default": EXACT,
    }
    assert report.count("aten.addmm.default") == 2
    assert report.count("aten.mm.default") == 3
    assert report.count("aten.sum.dim_IntList") == 2
    assert report.count("aten.threshold_backward.default") == 1
    assert report.ok
    rows = {r["op"]: r for r in report.rows}
    assert rows["aten.addmm.default"]["forward"] == 2 and rows["aten.addmm.default"]["backward"] == 0
    assert rows["aten.mm.default"]["backward"] == 3
    # forward sites: this file; backward sites: the forward line that made the node
    assert all(THIS in site for site in rows["aten.addmm.default"]["sites"])
    assert all(site.startswith("backward of AddmmBackward0 at ") and THIS in site
               for site in rows["aten.mm.default"]["sites"])
    assert all(p.grad is None for p in model.parameters())  # the audit put the gradients back


def test_audit_conv_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.Tanh())
    x = torch.randn(1, 2, 5, 5, requires_grad=True)
    report = softrep.audit(model, x)
    assert report.ops() == {
        "aten.convolution.default": REPRODUCIBLE,
        "aten.tanh.default": REPRODUCIBLE,
        "aten.detach.default": EXACT,
        "aten.tanh_backward.default": REPRODUCIBLE,
        "aten.convolution_backward.default": REPRODUCIBLE,
    }
    assert report.count("aten.convolution.default") == 1
    assert report.count("aten.convolution_backward.default") == 1
    assert report.ok


@pytest.mark.parametrize("op, expected", [
    (lambda x: torch.cumsum(x, 0), "aten.cumsum.default"),
    (lambda x: torch.zeros(3).index_add(0, torch.tensor([0, 0]), x[:2]), "aten.index_add.default"),
    (lambda x: torch.sort(x).values, "aten.sort.default"),
])
def test_audit_flags_an_op_softrep_lacks(op, expected):
    report = softrep.audit(op, torch.arange(4.0), backward=False)
    assert not report.ok
    assert report.ops()[expected] == NOT_REPRODUCIBLE
    assert [r["op"] for r in report.not_reproducible()] == [expected]
    text = str(report)
    assert expected in text and "1 not reproducible" in text


def test_audit_classes_depend_on_dtype_and_options():
    half = softrep.audit(lambda a, b: a @ b, torch.ones(2, 2, dtype=torch.float16),
                         torch.ones(2, 2, dtype=torch.float16), backward=False)
    assert half.ops() == {"aten.mm.default": NOT_REPRODUCIBLE}
    ints = softrep.audit(lambda a: (a + a).sum(), torch.arange(4), backward=False)
    assert ints.ops() == {"aten.add.Tensor": EXACT, "aten.sum.default": EXACT}
    scaled = softrep.audit(lambda c, a, b: torch.addmm(c, a, b, beta=2.0), torch.ones(2, 2), torch.ones(2, 2),
                           torch.ones(2, 2), backward=False)
    assert scaled.ops() == {"aten.addmm.default": NOT_REPRODUCIBLE}
    assert "beta=2.0" in scaled.not_reproducible()[0]["reason"]


def test_report_json_round_trip():
    report = softrep.audit(lambda x: torch.cumsum(softrep.exp(x), 0), torch.zeros(3), backward=False)
    text = report.to_json()
    data = json.loads(text)
    assert data["version"] == 1 and data["ok"] is False
    assert {r["op"] for r in data["ops"]} == set(report.ops())
    again = Report.from_json(text)
    assert again == report and again.to_json() == text and str(again) == str(report)
    assert again != softrep.audit(lambda x: x + 1, torch.zeros(3), backward=False)


def test_audit_needs_a_gradient_when_backward():
    with pytest.raises(ValueError, match="no output requires grad"):
        softrep.audit(lambda x: x * 2, torch.ones(2), backward=True)
    with pytest.raises(TypeError, match="'model_or_fn'"):
        softrep.audit(3)


def test_cli_prints_the_table(capsys):
    assert cli.main([str(SCRIPT)]) == 0
    out = capsys.readouterr().out
    assert "script ran with []" in out  # the script ran as __main__ with its own argv
    assert "aten.addmm.default" in out and "reproducible through softrep" in out
    assert "mlp_step.py:17" in out  # the line of `y = model(x)`
    assert "all reproducible" in out
    assert sys.argv[0] != str(SCRIPT)  # argv restored

    assert cli.main([str(SCRIPT), "--cumsum"]) == 1
    out = capsys.readouterr().out
    assert "script ran with ['--cumsum']" in out
    assert "aten.cumsum.default: softrep has no replacement" in out


def test_cli_through_python_m_softrep(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out_json = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "softrep", "audit", "--json", str(out_json), str(SCRIPT), "--cumsum"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "aten.cumsum.default" in proc.stdout
    report = Report.from_json(out_json.read_text())
    assert report.ops()["aten.cumsum.default"] == NOT_REPRODUCIBLE and not report.ok


def test_docs_table_in_sync():
    text = (ROOT / "docs" / "patching.md").read_text()
    assert ops.markdown_table() in text, "regenerate the table of docs/patching.md from ops.markdown_table()"


# --------------------------------------------------------------------------- strict / lenient


def test_strict_raises_naming_the_op_and_site():
    x = torch.arange(4.0)
    with pytest.raises(NotReproducibleError) as info:
        with softrep.reproducible(strict=True):
            torch.cumsum(x, 0)  # the line named in the error
    err = info.value
    assert err.op == "aten.cumsum.default"
    assert THIS in err.site and "aten.cumsum.default" in str(err) and err.site in str(err)


def test_lenient_warns_once_per_op_and_runs_torch():
    x = torch.arange(4.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with softrep.reproducible(strict=False) as mode:
            a = torch.cumsum(x, 0)
            b = torch.cumsum(x, 0)
            c = torch.cummax(x, 0).values
    ours = [w for w in caught if issubclass(w.category, NotReproducibleWarning)]
    assert len(ours) == 2
    assert "aten.cumsum.default" in str(ours[0].message) and "aten.cummax.default" in str(ours[1].message)
    assert torch.equal(a, torch.tensor([0.0, 1.0, 3.0, 6.0])) and torch.equal(a, b)
    assert torch.equal(c, x)
    assert not mode.counts  # nothing rerouted


def test_reproducible_argument_check():
    with pytest.raises(TypeError, match="'strict'"):
        softrep.reproducible(strict="yes")


# --------------------------------------------------------------------------- rerouting


def _sequential_sum_f32(values):
    acc = np.float32(0.0)
    for v in values:
        acc = np.float32(acc + np.float32(v))
    return float(acc)


def test_sum_is_rerouted_and_differs_from_torch():
    # 2**24 then 63 ones: a left-to-right float32 fold (softrep's order below 128
    # terms) absorbs every 1 (2**24 + 1 rounds to even, back to 2**24); torch's
    # vectorised sum adds the ones in separate lanes first and keeps them.
    x = torch.tensor([2.0**24] + [1.0] * 63)
    plain = torch.sum(x)
    with softrep.reproducible() as mode:
        patched = torch.sum(x)
    assert mode.counts["aten.sum.default"] == 1
    assert patched.item() == _sequential_sum_f32(x.tolist()) == 2.0**24
    assert plain.item() != patched.item()


def _torch_model(a, w, target):
    p = F.softmax(torch.matmul(a, w), dim=-1)
    d = p - target
    return (d * d).mean(), p


def _softrep_model(a, w, target):
    p = softrep.softmax(softrep.matmul(a, w), dim=-1)
    d = softrep.sub(p, target)
    return softrep.mean(softrep.mul(d, d)), p


def _step(model, a, w, target, mode=None):
    a = a.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    if mode is None:
        loss, p = model(a, w, target)
        loss.backward()
    else:
        with mode:
            loss, p = model(a, w, target)
            loss.backward()
    return loss.detach(), p.detach(), a.grad, w.grad


def _matmul_softmax_inputs(batch=(3,), k=5, n=4, w_batch=()):
    g = torch.Generator().manual_seed(1)
    a = torch.randn(*batch, k, generator=g)
    w = torch.randn(*w_batch, k, n, generator=g)
    target = torch.rand(*batch, n, generator=g)
    return a, w, target


@pytest.mark.parametrize("batch, w_batch, product", [((3,), (), "mm"), ((2, 3), (), "mm"), ((2, 3), (2,), "bmm")])
def test_functional_matmul_softmax_matches_softrep_api(batch, w_batch, product):
    a, w, target = _matmul_softmax_inputs(batch, w_batch=w_batch)
    mode = softrep.reproducible(strict=True)
    patched = _step(_torch_model, a, w, target, mode)
    reference = _step(_softrep_model, a, w, target)
    for x, y in zip(patched, reference):
        assert_same_bits(x, y)
    assert mode.counts[f"aten.{product}.default"] == 3  # forward, grad of a, grad of w
    assert mode.counts["aten._softmax.default"] == 1
    assert mode.counts["aten._softmax_backward_data.default"] == 1


def test_linear_conv_log_softmax_match_softrep_api():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 2, 5, 5, generator=g)
    cw, cb = torch.randn(3, 2, 3, 3, generator=g), torch.randn(3, generator=g)
    lw, lb = torch.randn(4, 27, generator=g), torch.randn(4, generator=g)
    labels = torch.tensor([1, 3])

    def torch_net(x, cw, cb, lw, lb):
        h = torch.tanh(F.conv2d(x, cw, cb, stride=2, padding=1)).flatten(1)
        z = F.log_softmax(F.linear(h, lw, lb), dim=1)
        return -z.gather(1, labels[:, None]).mean()

    def softrep_net(x, cw, cb, lw, lb):
        h = softrep.tanh(softrep.conv2d(x, cw, cb, stride=2, padding=1)).flatten(1)
        z = softrep.log_softmax(softrep.linear(h, lw, lb), dim=1)
        return softrep.neg(softrep.mean(z.gather(1, labels[:, None])))

    def run(net, mode=None):
        leaves = [t.clone().requires_grad_(True) for t in (x, cw, cb, lw, lb)]
        if mode is None:
            loss = net(*leaves)
            loss.backward()
        else:
            with mode:
                loss = net(*leaves)
                loss.backward()
        return [loss.detach()] + [t.grad for t in leaves]

    mode = softrep.reproducible()
    for got, want in zip(run(torch_net, mode), run(softrep_net)):
        assert_same_bits(got, want)
    # F.conv2d and F.linear are computed by softrep.conv2d / softrep.linear above
    # autograd (their backward is softrep's); the other ops are rerouted as aten ops
    assert mode.counts["torch.nn.functional.conv2d"] == 1 and mode.counts["torch.nn.functional.linear"] == 1
    for op in ("convolution", "convolution_backward", "addmm", "mm"):
        assert mode.counts[f"aten.{op}.default"] == 0, op
    for op in ("_log_softmax", "_log_softmax_backward_data", "tanh", "tanh_backward"):
        assert mode.counts[f"aten.{op}.default"] == 1, op

    # functions=False: the aten ops alone; the same forward and conv gradients,
    # but linear's weight gradient is one chain over the rows (aten.mm)
    aten_only = softrep.reproducible(functions=False)
    got = run(torch_net, aten_only)
    for i in (0, 1, 2, 3):
        assert_same_bits(got[i], run(softrep_net)[i])
    for op in ("convolution", "convolution_backward", "addmm", "_log_softmax", "_log_softmax_backward_data",
               "tanh", "tanh_backward"):
        assert aten_only.counts[f"aten.{op}.default"] == 1, op
    assert not any(name.startswith("torch.") for name in aten_only.counts)


@pytest.mark.parametrize("functions", [True, False])
def test_conv1d_matches_softrep_api(functions):
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(2, 2, 7, generator=g), torch.randn(3, 2, 3, generator=g)

    def run(fn, mode=None):
        xl, wl = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
        with mode if mode is not None else torch.enable_grad():
            out = fn(xl, wl, None, stride=2, padding=1, dilation=1)
            out.backward(torch.ones_like(out))
        return out.detach(), xl.grad, wl.grad

    mode = softrep.reproducible(functions=functions)
    for got, want in zip(run(F.conv1d, mode), run(softrep.conv1d)):
        assert_same_bits(got, want)
    # routed above autograd (softrep.conv1d), or rerouted as aten ops
    assert mode.counts["torch.nn.functional.conv1d"] == functions
    assert mode.counts["aten.convolution_backward.default"] == (not functions)


@pytest.mark.parametrize("name", ops.UNARY_MATH)
def test_unary_math_forward_matches_softrep(name):
    x = torch.linspace(0.05, 3.0, 11)
    with softrep.reproducible() as mode:
        got = getattr(torch, name)(x)
    assert mode.counts[f"aten.{name}.default"] == 1
    assert_same_bits(got, getattr(softrep, name)(x))


@pytest.mark.parametrize("torch_fn, softrep_fn", [
    (torch.exp, softrep.exp), (torch.log, softrep.log), (torch.tanh, softrep.tanh),
    (torch.sigmoid, softrep.sigmoid), (torch.sqrt, softrep.sqrt),
    (F.gelu, softrep.gelu), (lambda t: F.gelu(t, approximate="tanh"), lambda t: softrep.gelu(t, approximate="tanh")),
    (F.silu, softrep.silu), (lambda t: t ** 2, softrep.square),
    (lambda t: t.amax(1), lambda t: softrep.amax(t, 1)),
])
def test_activation_backward_matches_softrep_api(torch_fn, softrep_fn):
    g = torch.Generator().manual_seed(4)
    x = torch.rand(3, 7, generator=g) * 3 + 0.1
    seed = torch.randn(3, 7, generator=g)

    def run(fn, mode=None):
        xl = x.clone().requires_grad_(True)
        with mode if mode is not None else torch.enable_grad():
            out = fn(xl)
            out.backward(seed[:, :out.shape[1]] if out.dim() == 2 else seed[:, 0])
        return out.detach(), xl.grad

    for got, want in zip(run(torch_fn, softrep.reproducible()), run(softrep_fn)):
        assert_same_bits(got, want)


def test_elementwise_promotion_alpha_and_inplace():
    x = torch.tensor([1.0, 2.0**-24, 3.0])
    with softrep.reproducible() as mode:
        a = x * 3  # int scalar
        b = torch.arange(3) / 3  # int tensor, true division -> float32
        c = torch.add(x, x, alpha=0.1)  # one fused multiply-add, as torch's kernel
        d = x.clone()
        d.mul_(0.5)
        e = 1 - x  # rsub
    assert_same_bits(a, softrep.mul(x, 3.0))
    assert_same_bits(b, softrep.div(torch.tensor([0.0, 1.0, 2.0]), 3.0))
    assert_same_bits(c, softrep.fma(x, 0.1, x))
    assert_same_bits(d, softrep.mul(x, 0.5))
    assert_same_bits(e, softrep.sub(1.0, x))
    assert mode.counts["aten.add.Tensor"] == 1 and mode.counts["aten.mul_.Tensor"] == 1
    assert mode.counts["aten.rsub.Scalar"] == 1


def test_var_backward_is_torch_formula_in_softrep_ops():
    # torch writes var's gradient as several aten ops ((2 / dof) * grad * (x - mean)):
    # each is rerouted, so the result is reproducible, but it is torch's formula,
    # not softrep.var's autograd (mul(div(mul(g, 2), dof), sub(x, mean))); they
    # agree to a few ulps.
    g = torch.Generator().manual_seed(4)
    x = torch.rand(3, 7, generator=g)
    xl, xr = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    with softrep.reproducible(strict=True) as mode:
        out = xl.var(1)
        out.backward(torch.ones(3))
    ref = softrep.var(xr, 1)
    ref.backward(torch.ones(3))
    assert_same_bits(out.detach(), ref.detach())
    assert mode.counts["aten.var.correction"] == 1 and mode.counts["aten.sub.Tensor"] >= 1
    torch.testing.assert_close(xl.grad, xr.grad, rtol=1e-6, atol=0)


def test_softrep_api_inside_the_mode_is_unchanged():
    # softrep's own ops run torch ops (allocations, views, gather/scatter with one
    # index per row) inside: all exact, none refused
    a, w, target = _matmul_softmax_inputs()
    inside = _step(_softrep_model, a, w, target, softrep.reproducible(strict=True))
    for x, y in zip(inside, _step(_softrep_model, a, w, target)):
        assert_same_bits(x, y)
    labels = torch.tensor([1, 0, 3])

    def ce_step(mode=None):
        al = a.clone().requires_grad_(True)
        with mode if mode is not None else torch.enable_grad():
            loss = softrep.nn.functional.losses.cross_entropy(softrep.matmul(al, w), labels)
            loss.backward()
        return loss.detach(), al.grad

    for x, y in zip(ce_step(softrep.reproducible(strict=True)), ce_step()):
        assert_same_bits(x, y)


def test_scatter_is_exact_only_without_repeated_indices():
    zeros = torch.zeros(2, 3)
    once, twice = torch.tensor([[0, 2], [1, 0]]), torch.tensor([[0, 0], [1, 0]])
    distinct = softrep.audit(lambda s: zeros.scatter_add(1, once, s), torch.ones(2, 2), backward=False)
    repeated = softrep.audit(lambda s: zeros.scatter_add(1, twice, s), torch.ones(2, 2), backward=False)
    assert distinct.ops() == {"aten.scatter_add.default": EXACT}
    assert repeated.ops() == {"aten.scatter_add.default": NOT_REPRODUCIBLE}


# --------------------------------------------------------------------------- patch


class _FunctionalNet(torch.nn.Module):
    """A converted nn.Linear, then functional torch calls on an own parameter."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.proj = torch.nn.Linear(5, 4)
        self.mix = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return F.softmax(torch.matmul(self.proj(x), self.mix), dim=-1)


def test_patch_matches_softrep_api_and_reroutes_backward():
    model = _FunctionalNet()
    patched = softrep.patch(model)
    assert patched is not model
    g = torch.Generator().manual_seed(6)
    x = torch.randn(3, 5, generator=g, requires_grad=True)
    target = torch.rand(3, 4, generator=g)
    out = patched(x)
    loss = softrep.mean(softrep.mul(softrep.sub(out, target), softrep.sub(out, target)))
    loss.backward()  # outside any mode: the patch reroutes the backward itself

    xr = x.detach().clone().requires_grad_(True)
    w, b, mix = (t.detach().clone().requires_grad_(True) for t in (model.proj.weight, model.proj.bias, model.mix))
    ref = softrep.softmax(softrep.matmul(softrep.linear(xr, w, b), mix), dim=-1)
    ref_loss = softrep.mean(softrep.mul(softrep.sub(ref, target), softrep.sub(ref, target)))
    ref_loss.backward()
    assert_same_bits(out.detach(), ref.detach())
    assert_same_bits(x.grad, xr.grad)
    assert_same_bits(patched.proj.weight.grad, w.grad)
    assert_same_bits(patched.proj.bias.grad, b.grad)
    assert_same_bits(patched.mix.grad, mix.grad)
    assert model.mix.grad is None  # the original model is untouched
    counts = patched.softrep_counts
    assert counts["aten._softmax.default"] == 1 and counts["aten._softmax_backward_data.default"] == 1
    assert counts["aten.mm.default"] >= 3  # forward matmul + its two gradients, under the patch

    with torch.no_grad():
        assert_same_bits(patched(x), ref.detach())


def test_patch_strict_refuses_uncovered_op_at_run_time():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            return torch.cumsum(x * self.w, 0)

    patched = softrep.patch(Net())
    with pytest.raises(NotReproducibleError, match="aten.cumsum.default"):
        patched(torch.ones(3))
    lenient = softrep.patch(Net(), strict=False)
    with pytest.warns(NotReproducibleWarning, match="cumsum"):
        out = lenient(torch.ones(3))
    out.sum().backward()


# --------------------------------------------------------------------------- CUDA simulator


@pytest.mark.simulator
def test_simulator_functional_matmul_softmax_matches_cpu_softrep(monkeypatch):
    a, w, target = _matmul_softmax_inputs((2,), k=3, n=2)
    mode = softrep.reproducible(strict=True)
    patched = _step(_torch_model, a, w, target, mode)  # CUDA kernels, simulated
    assert mode.counts["aten.mm.default"] == 3
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
    reference = _step(_softrep_model, a, w, target)
    for x, y in zip(patched, reference):
        assert_same_bits(x, y)


def test_shape_errors_are_not_silent():
    with softrep.reproducible():
        with pytest.raises(ValueError, match="inner dimensions"):
            torch.mm(torch.ones(2, 3), torch.ones(4, 2))
        with pytest.raises(ValueError, match="broadcast"):
            torch.ones(2, 3) + torch.ones(4, 1, 2)


@pytest.mark.simulator
def test_simulator_conv_tanh_linear_log_softmax_matches_cpu_softrep(monkeypatch):
    g = torch.Generator().manual_seed(7)
    x, cw, cb = torch.randn(1, 1, 3, 3, generator=g), torch.randn(2, 1, 2, 2, generator=g), torch.randn(2, generator=g)
    lw, lb = torch.randn(2, 8, generator=g), torch.randn(2, generator=g)

    def torch_net(x, cw, cb, lw, lb):
        h = torch.tanh(F.conv2d(x, cw, cb)).flatten(1)
        return F.log_softmax(F.linear(h, lw, lb), dim=1)[:, 0].sum()

    def softrep_net(x, cw, cb, lw, lb):
        h = softrep.tanh(softrep.conv2d(x, cw, cb)).flatten(1)
        return softrep.sum(softrep.log_softmax(softrep.linear(h, lw, lb), dim=1)[:, 0])

    def run(net, mode=None):
        leaves = [t.clone().requires_grad_(True) for t in (x, cw, cb, lw, lb)]
        with mode if mode is not None else torch.enable_grad():
            loss = net(*leaves)
            loss.backward()
        return [loss.detach()] + [t.grad for t in leaves]

    mode = softrep.reproducible()
    patched = run(torch_net, mode)  # CUDA kernels, simulated
    assert mode.counts["torch.nn.functional.conv2d"] == 1 and mode.counts["torch.nn.functional.linear"] == 1
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
    for got, want in zip(patched, run(softrep_net)):
        assert_same_bits(got, want)


@pytest.mark.parametrize("functions", [True, False])
@pytest.mark.parametrize("kwargs", [{}, {"ignore_index": 2}, {"reduction": "sum"}, {"weight": "w"}])
def test_cross_entropy_matches_softrep_api(kwargs, functions):
    g = torch.Generator().manual_seed(8)
    logits = torch.randn(5, 4, generator=g)
    labels = torch.tensor([0, 2, 3, 2, 1])
    if kwargs.get("weight") == "w":
        kwargs = dict(kwargs, weight=torch.rand(4, generator=g) + 0.5)

    def run(fn, mode=None):
        x = logits.clone().requires_grad_(True)
        with mode if mode is not None else torch.enable_grad():
            loss = fn(x, labels, **kwargs)
            loss.backward()
        return loss.detach(), x.grad

    mode = softrep.reproducible(functions=functions)
    for got, want in zip(run(F.cross_entropy, mode), run(softrep.nn.functional.losses.cross_entropy)):
        assert_same_bits(got, want)
    assert mode.counts["torch.nn.functional.cross_entropy"] == functions
    assert mode.counts["aten.nll_loss_forward.default"] == mode.counts["aten.nll_loss_backward.default"] == (
        not functions)


@pytest.mark.parametrize("functions", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_softrep_api(reduction, functions):
    g = torch.Generator().manual_seed(9)
    x, t = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)

    def run(fn, mode=None):
        xl, tl = x.clone().requires_grad_(True), t.clone().requires_grad_(True)
        with mode if mode is not None else torch.enable_grad():
            loss = fn(xl, tl, reduction=reduction)
            loss.backward(torch.ones_like(loss))
        return loss.detach(), xl.grad, tl.grad

    mode = softrep.reproducible(functions=functions)
    for got, want in zip(run(F.mse_loss, mode), run(softrep.nn.functional.losses.mse_loss)):
        assert_same_bits(got, want)
    assert mode.counts["torch.nn.functional.mse_loss"] == functions
    assert mode.counts["aten.mse_loss.default"] == (not functions)
    assert mode.counts["aten.mse_loss_backward.default"] == (0 if functions else 2)


def test_cli_script_that_raises(tmp_path, capsys):
    script = tmp_path / "boom.py"
    script.write_text("import torch\ntorch.ones(2).exp()\nraise RuntimeError('boom')\n")
    assert cli.main([str(script)]) == 1
    captured = capsys.readouterr()
    assert "RuntimeError: boom" in captured.err
    assert "aten.exp.default" in captured.out and "exited with status 1" in captured.out


@pytest.mark.parametrize("functions", [True, False])
@pytest.mark.parametrize("normalized_shape, affine", [((4,), True), ((3, 4), True), ((4,), False)])
def test_layer_norm_matches_softrep_api(normalized_shape, affine, functions):
    g = torch.Generator().manual_seed(10)
    x = torch.randn(2, 3, 4, generator=g)
    w = torch.rand(normalized_shape, generator=g) + 0.5 if affine else None
    b = torch.randn(normalized_shape, generator=g) if affine else None
    seed = torch.randn(2, 3, 4, generator=g)

    def run(fn, mode=None):
        leaves = [None if t is None else t.clone().requires_grad_(True) for t in (x, w, b)]
        with mode if mode is not None else torch.enable_grad():
            out = fn(leaves[0], normalized_shape, leaves[1], leaves[2], 1e-3)
            out.backward(seed)
        return [out.detach()] + [t.grad for t in leaves if t is not None]

    mode = softrep.reproducible(functions=functions)
    for got, want in zip(run(F.layer_norm, mode), run(softrep.nn.functional.normalization.layer_norm)):
        assert_same_bits(got, want)
    assert mode.counts["torch.nn.functional.layer_norm"] == functions
    assert mode.counts["aten.native_layer_norm_backward.default"] == (not functions)


def test_layer_norm_backward_without_its_forward_refuses():
    x = torch.randn(2, 4, requires_grad=True)
    out = F.layer_norm(x, (4,))  # forward outside the mode: torch's rstd, no eps
    with softrep.reproducible(), pytest.raises(RuntimeError, match="eps is unknown"):
        out.sum().backward()


def test_audit_of_a_patched_model_sees_only_exact_ops():
    # the patch's mode sits above the audit's, so the audit sees what softrep
    # runs underneath (allocations, views): nothing left to fix
    plain = softrep.audit(_FunctionalNet(), torch.ones(3, 5))
    assert plain.ops()["aten._softmax.default"] == REPRODUCIBLE
    patched = softrep.audit(softrep.patch(_FunctionalNet()), torch.ones(3, 5))
    assert patched.ok
    assert "aten._softmax.default" not in patched.ops() and "aten.mm.default" not in patched.ops()
    assert set(patched.ops().values()) == {EXACT}


# --------------------------------------------------------------------------- torch functions routed above autograd


class _OwnLinear(torch.nn.Module):
    """A user module that from_torch_module cannot convert: F.linear on its own parameters."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(11)
        self.weight = torch.nn.Parameter(torch.randn(3, 5, generator=g))
        self.bias = torch.nn.Parameter(torch.randn(3, generator=g))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


def _linear_grads(fn, x, w, b, seed):
    leaves = [t.clone().requires_grad_(True) for t in (w, b)]
    out = fn(x, *leaves)
    out.backward(seed)
    return [out.detach()] + [t.grad for t in leaves]


def test_routed_linear_gradient_is_the_batch_order_of_softrep_linear():
    # (N, T, K) rows: softrep.linear's weight gradient is per-sample partials added
    # along the batch tree; torch's AddmmBackward is one mm over all N*T rows
    g = torch.Generator().manual_seed(12)
    x, w, b = torch.randn(5, 7, 33, generator=g), torch.randn(4, 33, generator=g), torch.randn(4, generator=g)
    seed = torch.randn(5, 7, 4, generator=g)
    want = _linear_grads(softrep.linear, x, w, b, seed)
    with softrep.reproducible() as mode:
        got = _linear_grads(F.linear, x, w, b, seed)
    for a, c in zip(got, want):
        assert_same_bits(a, c)
    assert dict(mode.counts) == {"torch.nn.functional.linear": 1}
    with softrep.reproducible(functions=False) as aten_only:
        chain = _linear_grads(F.linear, x, w, b, seed)
    assert_same_bits(chain[0], want[0])  # the forward is the same either way
    assert not torch.equal(_bits(chain[1]), _bits(want[1]))  # the weight gradient is not
    assert "aten.mm.default" in aten_only.counts


def test_patch_routes_the_functions_of_unconverted_modules():
    model = torch.nn.Sequential(_OwnLinear(), torch.nn.Tanh())
    patched = softrep.patch(model)
    g = torch.Generator().manual_seed(13)
    x, seed = torch.randn(4, 2, 5, generator=g), torch.randn(4, 2, 3, generator=g)
    patched(x).backward(seed)  # the backward outside any mode
    assert patched.softrep_counts["torch.nn.functional.linear"] == 1
    assert "aten.mm.default" not in patched.softrep_counts
    w, b = (t.detach().clone().requires_grad_(True) for t in (model[0].weight, model[0].bias))
    softrep.tanh(softrep.linear(x, w, b)).backward(seed)
    assert_same_bits(patched[0].weight.grad, w.grad)
    assert_same_bits(patched[0].bias.grad, b.grad)


@pytest.mark.parametrize("call, expect", [
    # arguments softrep's function does not take: torch's function runs, its aten
    # ops rerouted by the dispatch mode as before
    (lambda x, w: F.conv2d(x, w, padding="same"), "aten.convolution.default"),
    (lambda x, w: F.embedding(torch.tensor([[0, 1]]), w[0, 0], max_norm=1.0), None),
    (lambda x, w: F.cross_entropy(x.flatten(1), torch.tensor([0, 1]), label_smoothing=0.1),
     "aten._log_softmax.default"),
    (lambda x, w: F.linear(x.flatten(1).double(), w.flatten(1)[:, :8]), None),  # mixed dtypes
])
def test_unsupported_arguments_fall_back_to_the_aten_ops(call, expect):
    g = torch.Generator().manual_seed(14)
    x, w = torch.randn(2, 2, 2, 2, generator=g), torch.randn(3, 2, 3, 3, generator=g)
    with softrep.reproducible(strict=False) as mode, warnings.catch_warnings():
        warnings.simplefilter("ignore", softrep.tools.dispatch.NotReproducibleWarning)
        try:
            call(x, w)
        except RuntimeError:
            pass  # torch's own error for the mixed dtypes: still torch's function that ran
    assert not any(name.startswith("torch.") for name in mode.counts), dict(mode.counts)
    if expect is not None:
        assert expect in mode.counts, dict(mode.counts)


def test_same_padding_conv_matches_explicit_padding():
    g = torch.Generator().manual_seed(15)
    x, w = torch.randn(2, 2, 5, 5, generator=g), torch.randn(3, 2, 3, 3, generator=g)
    with softrep.reproducible(strict=True) as mode:
        got = F.conv2d(x, w, padding="same")
    assert_same_bits(got, softrep.conv2d(x, w, padding=1))
    assert mode.counts["aten.convolution.default"] == 1


def test_float16_linear_is_not_routed_and_refused():
    x, w = torch.ones(2, 3, dtype=torch.float16), torch.ones(4, 3, dtype=torch.float16)
    with pytest.raises(NotReproducibleError, match="aten.mm"), softrep.reproducible(strict=True):
        F.linear(x, w)


def test_linear_under_autocast_is_not_routed():
    # autocast casts to bfloat16 below the function level: torch's semantics are a
    # bfloat16 product, which the aten path refuses, rather than softrep's float32 one
    x, w = torch.ones(2, 3), torch.ones(4, 3)
    mode = softrep.reproducible(strict=True)
    with pytest.raises(NotReproducibleError, match="bfloat16"), mode, torch.autocast("cpu", dtype=torch.bfloat16):
        F.linear(x, w)
    assert "torch.nn.functional.linear" not in mode.counts


class _Wrapped(torch.Tensor):
    """A tensor subclass with a __torch_function__ of its own."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def test_tensor_subclass_is_not_routed():
    x, w = torch.ones(2, 3).as_subclass(_Wrapped), torch.ones(4, 3)
    with softrep.reproducible() as mode:
        F.linear(x, w)
    assert "torch.nn.functional.linear" not in mode.counts and "aten.mm.default" in mode.counts


def test_torch_func_transforms_keep_the_aten_path():
    g = torch.Generator().manual_seed(16)
    x, w, b = torch.randn(4, 3, generator=g), torch.randn(2, 3, generator=g), torch.randn(2, generator=g)
    with softrep.reproducible() as mode:
        grad = torch.func.grad(lambda w: F.linear(x, w, b).sum())(w)
        rows = torch.func.vmap(lambda r: F.linear(r, w, b))(x)
    assert not any(name.startswith("torch.") for name in mode.counts)
    with softrep.reproducible(functions=False):
        assert_same_bits(grad, torch.func.grad(lambda w: F.linear(x, w, b).sum())(w))
    assert_same_bits(rows, softrep.linear(x, w, b))


def test_functions_argument_is_checked():
    with pytest.raises(TypeError, match="'functions'"):
        softrep.reproducible(functions="yes")


def test_the_function_mode_leaves_with_the_dispatch_mode():
    mode = softrep.reproducible()
    before = torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()
    with pytest.raises(ZeroDivisionError):
        with mode:
            assert torch._C._len_torch_function_stack() == before[0] + 1
            1 / 0
    assert (torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()) == before
    x, w = torch.ones(2, 3), torch.ones(4, 3)
    with mode:  # entered again: routed again
        F.linear(x, w)
    with softrep.reproducible(functions=False):
        assert torch._C._len_torch_function_stack() == before[0]
    assert mode.counts["torch.nn.functional.linear"] == 1
