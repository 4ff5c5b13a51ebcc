"""softrep.optim: exact op order (MPFR reference), agreement with torch.optim,
bit-identical reruns and thread counts, state_dict compatibility with torch."""

import copy
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import softrep
from golden import normal_tensor
from references import mpfr_op

F32 = np.float32


def _grads(seed, shape, steps):
    return [normal_tensor(seed + k, shape) for k in range(steps)]


def _run(make_opt, module, steps, seed=0):
    """Feed fixed gradients (independent of the parameters) for `steps` steps."""
    opt = make_opt(module.parameters())
    for k in range(steps):
        for j, p in enumerate(module.parameters()):
            p.grad = normal_tensor(1000 * j + seed + k, p.shape)
        opt.step()
    return opt


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))


def _op(name, *args):
    return mpfr_op(name, args, F32)


def test_sgd_exact_order():
    p0, g0, g1 = (normal_tensor(s, (6,)) for s in (1, 2, 3))
    lr, mom, wd = 0.1, 0.9, 0.01
    p = torch.nn.Parameter(p0.clone())
    opt = softrep.optim.SGD([p], lr=lr, momentum=mom, weight_decay=wd, nesterov=True)
    for g in (g0, g1):
        p.grad = g.clone()
        opt.step()
    for i in range(6):
        x, buf = F32(p0[i]), None
        for g in (g0, g1):
            d = _op("fma", x, F32(wd), F32(g[i]))
            buf = d if buf is None else _op("fma", d, F32(1.0), _op("mul", buf, F32(mom)))
            d = _op("fma", buf, F32(mom), d)
            x = _op("fma", d, F32(-lr), x)
        assert p[i].detach().numpy().tobytes() == np.array(x).tobytes()


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_exact_order(decoupled):
    p0, g0, g1 = (normal_tensor(s, (5,)) for s in (4, 5, 6))
    lr, b1, b2, eps, wd = 1e-2, 0.9, 0.999, 1e-8, 0.1
    p = torch.nn.Parameter(p0.clone())
    cls = softrep.optim.AdamW if decoupled else softrep.optim.Adam
    opt = cls([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    for g in (g0, g1):
        p.grad = g.clone()
        opt.step()
    for i in range(5):
        x, m, v = F32(p0[i]), F32(0), F32(0)
        for step, g in enumerate((g0, g1), start=1):
            g = F32(g[i])
            if decoupled:
                x = _op("mul", x, F32(1.0 - lr * wd))
            else:
                g = _op("fma", x, F32(wd), g)
            m = _op("fma", _op("sub", g, m), F32(1 - b1), m)
            v = _op("fma", _op("mul", g, g), F32(1 - b2), _op("mul", v, F32(b2)))
            # binary64 host scalars: products of the betas (at most 2 factors here, exact order irrelevant)
            step_size = lr / (1.0 - b1**step)
            bc2_sqrt = math.sqrt(1.0 - b2**step)
            denom = _op("add", _op("div", _op("sqrt", v), F32(bc2_sqrt)), F32(eps))
            x = _op("fma", _op("div", m, denom), F32(-step_size), x)
        assert p[i].detach().numpy().tobytes() == np.array(x).tobytes(), i


def _documented_power(base, n):
    """b^n as docs/training.md writes it: the bits of n from the lowest, the
    result times the running square where a bit is set (binary64)."""
    result, square = 1.0, base
    for bit in bin(n)[2:][::-1]:
        if bit == "1":
            result *= square
        square *= square
    return result


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_amsgrad_exact_order(decoupled):
    """amsgrad: denom from max(max_v, v), the running maximum of the second
    moments; gradients shrinking by 8x per step with b2 = 0.5 make v fall, so
    the maximum is taken from the past at the later steps."""
    p0 = normal_tensor(7, (5,))
    grads = [normal_tensor(8 + k, (5,)) * 8.0 ** -k for k in range(4)]
    lr, b1, b2, eps, wd = 1e-2, 0.9, 0.5, 1e-8, 0.1
    p = torch.nn.Parameter(p0.clone())
    cls = softrep.optim.AdamW if decoupled else softrep.optim.Adam
    opt = cls([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, amsgrad=True)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    took_past = 0
    for i in range(5):
        x, m, v, vmax = F32(p0[i]), F32(0), F32(0), F32(0)
        for step, g in enumerate(grads, start=1):
            g = F32(g[i])
            if decoupled:
                x = _op("mul", x, F32(1.0 - lr * wd))
            else:
                g = _op("fma", x, F32(wd), g)
            m = _op("fma", _op("sub", g, m), F32(1 - b1), m)
            v = _op("fma", _op("mul", g, g), F32(1 - b2), _op("mul", v, F32(b2)))
            took_past += bool(vmax > v)
            vmax = max(vmax, v)
            step_size = lr / (1.0 - _documented_power(b1, step))
            bc2_sqrt = math.sqrt(1.0 - _documented_power(b2, step))
            denom = _op("add", _op("div", _op("sqrt", vmax), F32(bc2_sqrt)), F32(eps))
            x = _op("fma", _op("div", m, denom), F32(-step_size), x)
        assert p[i].detach().numpy().tobytes() == np.array(x).tobytes(), i
        assert opt.state[p]["max_exp_avg_sq"][i].numpy().tobytes() == np.array(vmax).tobytes(), i
    assert took_past > 0


CONFIGS = [
    (lambda ps: torch.optim.SGD(ps, lr=0.05), lambda ps: softrep.optim.SGD(ps, lr=0.05)),
    (lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-2),
     lambda ps: softrep.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-2)),
    (lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, maximize=True),
     lambda ps: softrep.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    (lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=1e-2),
     lambda ps: softrep.optim.Adam(ps, lr=1e-2, weight_decay=1e-2)),
    (lambda ps: torch.optim.AdamW(ps, lr=1e-2), lambda ps: softrep.optim.AdamW(ps, lr=1e-2)),
    (lambda ps: torch.optim.Adam(ps, lr=1e-2, betas=(0.8, 0.6), amsgrad=True),
     lambda ps: softrep.optim.Adam(ps, lr=1e-2, betas=(0.8, 0.6), amsgrad=True)),
    (lambda ps: torch.optim.AdamW(ps, lr=1e-2, betas=(0.8, 0.6), amsgrad=True, maximize=True),
     lambda ps: softrep.optim.AdamW(ps, lr=1e-2, betas=(0.8, 0.6), amsgrad=True, maximize=True)),
]


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_agrees_with_torch_and_state_dict_matches(index):
    make_torch, make_soft = CONFIGS[index]
    a, b = _model(), _model()
    ta = _run(make_torch, a, 4)
    sb = _run(make_soft, b, 4)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pb, pa, rtol=1e-5, atol=1e-6)
    sd_t, sd_s = ta.state_dict(), sb.state_dict()
    assert sd_t["param_groups"] == sd_s["param_groups"]
    assert sd_t["state"].keys() == sd_s["state"].keys()
    for k in sd_t["state"]:
        assert sd_t["state"][k].keys() == sd_s["state"][k].keys()
        for name in sd_t["state"][k]:
            torch.testing.assert_close(sd_s["state"][k][name], sd_t["state"][k][name], rtol=1e-5, atol=1e-6)


def test_load_torch_state_dict_and_continue():
    a, b = _model(), _model()
    ta = _run(lambda ps: torch.optim.Adam(ps, lr=1e-2), a, 3)
    b.load_state_dict(a.state_dict())
    sb = softrep.optim.Adam(b.parameters(), lr=1e-2)
    # torch's load_state_dict keeps the tensors of the dict: copy, or both optimizers share them
    sb.load_state_dict(copy.deepcopy(ta.state_dict()))
    for k in range(2):
        for j, (pa, pb) in enumerate(zip(a.parameters(), b.parameters())):
            pa.grad = pb.grad = normal_tensor(500 + 10 * j + k, pa.shape)
        ta.step()
        sb.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pb, pa, rtol=1e-5, atol=1e-6)
    assert int(sb.state_dict()["state"][0]["step"].item()) == 5


def test_state_dict_round_trip_bit_identical():
    a, b = _model(), _model()
    make = lambda ps: softrep.optim.AdamW(ps, lr=1e-2)  # noqa: E731
    sa = _run(make, a, 2)
    b.load_state_dict(a.state_dict())
    sb = make(b.parameters())
    sb.load_state_dict(copy.deepcopy(sa.state_dict()))
    for opt, mod in ((sa, a), (sb, b)):
        for k in range(2):
            for j, p in enumerate(mod.parameters()):
                p.grad = normal_tensor(700 + 10 * j + k, p.shape)
            opt.step()
    assert softrep.fingerprint(a) == softrep.fingerprint(b)
    assert softrep.fingerprint(sa) == softrep.fingerprint(sb)


def test_two_runs_bit_identical():
    for _, make_soft in CONFIGS[1:]:
        a, b = _model(), _model()
        oa, ob = _run(make_soft, a, 3), _run(make_soft, b, 3)
        assert softrep.fingerprint(a) == softrep.fingerprint(b)
        assert softrep.fingerprint(oa) == softrep.fingerprint(ob)


_SCRIPT = """
import sys, torch, softrep
sys.path.insert(0, 'tests')
from golden import normal_tensor
torch.manual_seed(0)
m = torch.nn.Linear(300, 20, dtype=torch.float64)
out = []
for make in (lambda ps: softrep.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
             lambda ps: softrep.optim.Adam(ps, lr=1e-3, weight_decay=0.1)):
    opt = make(m.parameters())
    for k in range(2):
        for j, p in enumerate(m.parameters()):
            p.grad = normal_tensor(10 * j + k, p.shape, dtype=torch.float64)
        opt.step()
    out.append(softrep.fingerprint([m, opt]))
print(out)
"""


def test_thread_counts_bit_identical():
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, SOFTREP_BACKEND="cpu")
        proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout)
    assert outs[0] == outs[1] and len(outs[0]) > 64


def test_bad_arguments():
    p = [torch.nn.Parameter(torch.ones(2))]
    with pytest.raises(TypeError, match="'amsgrad'"):
        softrep.optim.Adam(p, amsgrad="yes")
    with pytest.raises(ValueError, match="'lr'"):
        softrep.optim.SGD(p, lr=-1.0)
    with pytest.raises(ValueError, match="'nesterov'"):
        softrep.optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="'betas\\[1\\]'"):
        softrep.optim.AdamW(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="'foreach'"):
        softrep.optim.Adam(p, foreach=True)
    with pytest.raises(TypeError, match="'eps'"):
        softrep.optim.Adam(p, eps="x")


def _tiny_training(make):
    p = torch.nn.Parameter(normal_tensor(1, (3,)))
    opt = make([p])
    for k in range(2):
        p.grad = normal_tensor(10 + k, (3,))
        opt.step()
    return softrep.fingerprint([p.detach(), opt])


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    makes = (lambda ps: softrep.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
             lambda ps: softrep.optim.AdamW(ps, lr=1e-2))
    sim = [_tiny_training(m) for m in makes]
    backend("cpu")
    assert sim == [_tiny_training(m) for m in makes]
