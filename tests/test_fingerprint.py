import hashlib
import struct

import pytest
import torch

import softrep


def _field(b):
    return struct.pack("<Q", len(b)) + b


def test_tiny_tensor_hand_computed():
    t = torch.tensor([1.0, -2.0], dtype=torch.float32)
    expected = hashlib.sha256(
        b"softrep.fingerprint.v1\n"
        + _field(b"")
        + b"T" + _field(b"torch.float32")
        + struct.pack("<Q", 1) + struct.pack("<Q", 2)
        + _field(struct.pack("<ff", 1.0, -2.0))
    ).hexdigest()
    assert softrep.fingerprint(t) == expected


def test_state_dict_with_scalar_hand_computed():
    sd = {"w": torch.tensor(3, dtype=torch.int64), "lr": 0.5}
    expected = hashlib.sha256(
        b"softrep.fingerprint.v1\n"
        + _field(b"w") + b"T" + _field(b"torch.int64") + struct.pack("<Q", 0)
        + _field(struct.pack("<q", 3))
        + _field(b"lr") + b"S" + _field(b"float:0.5")
    ).hexdigest()
    assert softrep.fingerprint(sd) == expected


def test_sensitivity():
    a, b = torch.zeros(2), torch.ones(2)
    base = softrep.fingerprint({"a": a, "b": b})
    assert softrep.fingerprint({"b": b, "a": a}) != base          # order
    assert softrep.fingerprint({"a": a, "c": b}) != base          # naming
    assert softrep.fingerprint({"a": a, "b": b.double()}) != base  # dtype
    assert softrep.fingerprint({"a": a, "b": b.reshape(2, 1)}) != base  # shape
    c = b.clone()
    c[1] = torch.nextafter(c[1], torch.tensor(2.0))
    assert softrep.fingerprint({"a": a, "b": c}) != base          # one bit
    assert softrep.fingerprint({"a": a, "b": b}) == base


def test_module_equals_its_state_dict_and_noncontiguous():
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    assert softrep.fingerprint(m) == softrep.fingerprint(m.state_dict())
    x = torch.arange(6.0).reshape(2, 3)
    assert softrep.fingerprint(x.t()) == softrep.fingerprint(x.t().contiguous())


def test_optimizer_and_nested():
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = torch.ones(2)
    opt.step()
    assert softrep.fingerprint(opt) == softrep.fingerprint(opt.state_dict())
    opt.step()
    assert softrep.fingerprint(opt) != softrep.fingerprint({"x": [1, 2]})
    lin = torch.nn.Linear(2, 1)
    assert softrep.fingerprint([lin, opt]) == softrep.fingerprint([lin.state_dict(), opt.state_dict()])


def test_bad_input():
    with pytest.raises(TypeError, match="'obj'"):
        softrep.fingerprint(3)
    with pytest.raises(TypeError, match="object"):
        softrep.fingerprint({"x": object()})
