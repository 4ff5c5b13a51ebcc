"""softrep.ops.validate.memoized_check: argument checks remembered per call
signature, without changing what a call is told."""

import pytest
import torch

import softrep
from softrep.ops.validate import memoized_check


def test_remembers_values_and_never_errors():
    calls = []

    def check(a, b):
        calls.append((a, b))
        if a is True:
            raise TypeError("a must not be a bool")
        return (a, tuple(b))

    run = memoized_check(check)
    assert run(1, [2, 3]) == (1, (2, 3)) and run(1, [2, 3]) == (1, (2, 3))
    assert len(calls) == 1
    # True == 1 and (2, 3) == [2, 3] in Python: the key tells them apart by type
    with pytest.raises(TypeError):
        run(True, [2, 3])
    with pytest.raises(TypeError):  # an error is not remembered: raised again, checked again
        run(True, [2, 3])
    assert run(1, (2, 3)) == (1, (2, 3))  # the tuple of the list's items: the same key
    assert len(calls) == 3
    assert run(1.0, (2, 3)) == (1.0, (2, 3))
    assert len(calls) == 4
    run(1, {"unhashable": 1}.keys())  # an unhashable argument: checked every time
    run(1, {"unhashable": 1}.keys())
    assert len(calls) == 6
    # items are told apart by type too, in a shape-like tuple of ints and beside it
    assert run(1, (2.0, 3)) == (1, (2.0, 3)) and len(calls) == 7
    assert run(1, [1, 3]) == (1, (1, 3)) and len(calls) == 8
    assert run(1, (True, 3)) == (1, (True, 3)) and len(calls) == 9
    assert run(1, torch.Size([1, 3])) == (1, (1, 3)) and len(calls) == 9  # a Size is the tuple of its items
    assert run(1, ((1, 3),)) == (1, ((1, 3),)) and run(1, (((1, 3),),)) == (1, (((1, 3),),)) and len(calls) == 11


def test_layer_arguments_still_checked_at_every_call():
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    assert softrep.conv2d(x, w, stride=2).shape == (2, 4, 3, 3)
    for _ in range(2):
        with pytest.raises(ValueError, match="'stride'"):
            softrep.conv2d(x, w, stride=True)
        with pytest.raises(ValueError, match="'padding'"):
            softrep.max_pool2d(x, 2, padding=2)
    assert softrep.max_pool2d(x, [2, 2], stride=[2, 2]).shape == (2, 3, 4, 4)
    assert softrep.max_pool2d(x, (2, 2), stride=(2, 2)).shape == (2, 3, 4, 4)
