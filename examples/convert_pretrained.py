"""Convert an existing torch model with softrep.from_torch_module and compare.

No download is needed: the "pretrained" model is a small ResNet-style CNN that
plain torch trains for one epoch on scikit-learn's digits.  softrep then
converts a copy (same weights, buffers and mode) and both run the test set.
The two agree to float32 rounding -- softrep does not try to reproduce torch's
bits, which differ between machines -- while softrep's own output is the same
on every machine.

    python examples/convert_pretrained.py
"""

import os

import torch
from sklearn.datasets import load_digits

import softrep


class BasicBlock(torch.nn.Module):
    """torchvision's ResNet BasicBlock, in miniature."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.relu = torch.nn.ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                  torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
    BasicBlock(16, 16), BasicBlock(16, 32, stride=2),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10),
)
digits = load_digits()
x = torch.tensor(digits.images, dtype=torch.float32).div_(16).unsqueeze(1)
y = torch.tensor(digits.target)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
batches = torch.randperm(1400).split(50)
batches = batches[:int(os.environ.get("SOFTREP_EXAMPLE_BATCHES", len(batches)))]  # the tests shorten the run
for batch in batches:  # "pretraining", plain torch
    loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
model.eval()

converted = softrep.from_torch_module(model)  # a deep copy; `model` is untouched
print(converted)
with torch.no_grad():
    ref, out = model(x[1400:]), converted(x[1400:])
diff = (out - ref).abs()
print(f"test images: {len(ref)}")
print(f"max |softrep - torch|      : {diff.max().item():.3e}  (logits up to {ref.abs().max().item():.1f})")
print(f"same predicted class       : {(out.argmax(1) == ref.argmax(1)).float().mean().item():.2%}")
print(f"accuracy torch / softrep   : {(ref.argmax(1) == y[1400:]).float().mean().item():.2%} / "
      f"{(out.argmax(1) == y[1400:]).float().mean().item():.2%}")
print(f"softrep logits fingerprint : {softrep.fingerprint(out)}  (torch's own weights differ by machine;"
      f" given these weights, this hash is the same everywhere)")
