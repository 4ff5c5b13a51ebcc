# softrep: no kernels
"""A tiny training step, audited by tests/test_dispatch.py through `python -m softrep audit`.

Usage: mlp_step.py [--cumsum]: with --cumsum the forward also calls torch.cumsum
(not reproducible).  The weights are set without torch's random generator
(skip_init, then fixed values), which the audit would flag."""
import sys

import torch

model = torch.nn.Sequential(torch.nn.utils.skip_init(torch.nn.Linear, 4, 5), torch.nn.ReLU(),
                            torch.nn.utils.skip_init(torch.nn.Linear, 5, 3))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.arange(p.numel()).reshape(p.shape) * 0.125 - 1.0)
x = torch.ones(2, 4)
y = model(x)
if "--cumsum" in sys.argv[1:]:
    y = torch.cumsum(y, dim=1)
y.sum().backward()
print("script ran with", sys.argv[1:])
