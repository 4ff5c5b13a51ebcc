"""docs/lowprecision.md: torch's .to(torch.float8_e4m3fn) saturates, and
round_to(..., saturate=True) reproduces it; without saturate, overflow is NaN
as in ml_dtypes."""

import math

import ml_dtypes
import numpy as np
import torch

import softrep


def _values():
    x = torch.linspace(-1000.0, 1000.0, 40001)
    return torch.cat([x, torch.tensor([math.inf, -math.inf, 3e38, -3e38, 464.0, -464.0, 464.5])])


def test_saturate_matches_torch():
    x = _values()
    ours = softrep.round_to(x, "float8_e4m3fn", saturate=True)
    theirs = x.to(torch.float8_e4m3fn).float()
    assert torch.equal(ours, theirs)


def test_default_matches_ml_dtypes():
    x = _values()
    ours = softrep.round_to(x, "float8_e4m3fn").numpy()
    ref = x.numpy().astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert np.array_equal(np.isnan(ours), np.isnan(ref))
    assert np.array_equal(ours[~np.isnan(ours)], ref[~np.isnan(ref)])
    assert np.isnan(ours[x.numpy() == 1000.0]).all()
