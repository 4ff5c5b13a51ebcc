# softrep: no kernels
"""softrep.from_torch_module: converted copies compute like torch (tolerance) with
softrep ops, the original is untouched, and unsupported submodules are named."""

import warnings

import pytest
import torch
from torch import nn

import softrep
import softrep.nn as snn
from golden import normal_tensor


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: conv-bn-relu-conv-bn plus the identity or
    downsampled shortcut, then relu."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(cout, cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + identity  # torch's add: one IEEE rounding per element, the same bits everywhere
        return self.relu(out)


def _resnet(dtype=torch.float32):
    torch.manual_seed(0)
    model = nn.Sequential(BasicBlock(3, 6, stride=2), BasicBlock(6, 6)).to(dtype)
    with torch.no_grad():  # non-trivial running statistics and affine parameters
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


def _x(seed, *shape, dtype=torch.float32):
    return normal_tensor(seed, shape, dtype=dtype)


def test_resnet_block_train_and_eval():
    model = _resnet()
    before = softrep.fingerprint(model)
    soft = softrep.from_torch_module(model)
    assert softrep.fingerprint(soft) == before  # same parameters and buffers
    assert softrep.fingerprint(model) == before
    kinds = {type(m) for m in soft.modules()}
    assert {snn.Conv2d, snn.BatchNorm2d, snn.ReLU} <= kinds and not {nn.Conv2d, nn.BatchNorm2d, nn.ReLU} & kinds
    assert all(type(m) in (nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.Sequential, BasicBlock) for m in model.modules())
    for p, q in zip(model.parameters(), soft.parameters()):
        assert p.data_ptr() != q.data_ptr()
    x = _x(1, 2, 3, 8, 8)
    for train in (True, False):
        model.train(train), soft.train(train)
        torch.testing.assert_close(soft(x), model(x), rtol=1e-5, atol=1e-5)
    # training the copy updates its running statistics, not the original's
    snapshot = softrep.fingerprint(model)
    soft.train()
    soft(x)
    assert softrep.fingerprint(model) == snapshot
    for m, m_ref in zip(soft.modules(), model.modules()):
        if isinstance(m, nn.BatchNorm2d):
            assert int(m.num_batches_tracked) == int(m_ref.num_batches_tracked) + 1


def test_mode_dtype_and_gradients_kept():
    model = _resnet(torch.float64).eval()
    soft = softrep.from_torch_module(model)
    assert not any(m.training for m in soft.modules())
    assert all(p.dtype == torch.float64 and p.device == torch.device("cpu") for p in soft.parameters())
    x = _x(2, 1, 3, 6, 6, dtype=torch.float64)
    soft(x).sum().backward()
    model(x).sum().backward()
    for (name, p), q in zip(soft.named_parameters(), model.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer(norm_first, activation):
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation=activation, norm_first=norm_first,
                                       batch_first=True)
    x = _x(3, 2, 5, 8)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    soft = softrep.from_torch_module(layer)
    assert type(soft.self_attn) is snn.MultiheadAttention and type(soft.linear1) is snn.Linear
    assert isinstance(soft.self_attn.out_proj, snn.Linear)  # torch's NonDynamicallyQuantizableLinear, converted
    assert soft.activation is getattr(softrep.nn.functional, activation)
    assert layer.activation is getattr(torch.nn.functional, activation)
    layer.eval(), soft.eval()
    torch.testing.assert_close(soft(x, src_key_padding_mask=padding), layer(x, src_key_padding_mask=padding),
                               rtol=1e-5, atol=1e-5)
    # train mode: dropout masks differ from torch's; with p = 0 the maths must agree
    for m in (layer, soft):
        m.train()
        for d in (m.dropout, m.dropout1, m.dropout2):
            d.p = 0.0
        m.self_attn.dropout = 0.0
    torch.testing.assert_close(soft(x), layer(x), rtol=1e-5, atol=1e-5)


class Scaled(nn.Linear):
    def scale(self):
        return 2


class OwnForward(nn.Linear):
    def forward(self, x):
        return nn.functional.linear(x, self.weight) * 2


class Leaf(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return x * self.w


def test_subclasses_convert_by_behaviour():
    model = nn.Sequential(Scaled(3, 3), nn.Sequential(nn.Flatten(), nn.Identity()))
    soft = softrep.from_torch_module(model)
    assert isinstance(soft[0], snn.Linear) and isinstance(soft[0], Scaled) and soft[0].scale() == 2
    assert type(soft[1][0]) is nn.Flatten
    x = _x(4, 2, 3)
    torch.testing.assert_close(soft(x), model(x))


def _unsupported_model():
    return nn.Sequential(nn.Linear(3, 3), nn.LSTM(3, 3), nn.Sequential(nn.ConvTranspose2d(2, 2, 2), Leaf()),
                         OwnForward(3, 3), nn.Conv2d(2, 2, 3, padding_mode="circular"))


def test_strict_names_every_unsupported_submodule():
    model = _unsupported_model()
    with pytest.raises(softrep.UnsupportedModuleError) as info:
        softrep.from_torch_module(model)
    named = {(name, type_name.rsplit(".", 1)[-1]) for name, type_name, _ in info.value.modules}
    assert named == {("1", "LSTM"), ("2.0", "ConvTranspose2d"), ("2.1", "Leaf"), ("3", "OwnForward"),
                     ("4", "Conv2d")}
    message = str(info.value)
    assert "LSTM" in message and "ConvTranspose2d" in message and "padding_mode" in message
    assert type(model[0]) is nn.Linear  # nothing converted, nothing changed


def test_not_strict_warns_once_each_and_converts_the_rest():
    model = _unsupported_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        soft = softrep.from_torch_module(model, strict=False)
    assert len([w for w in caught if "from_torch_module" in str(w.message)]) == 5
    assert type(soft[0]) is snn.Linear
    assert type(soft[1]) is nn.LSTM and type(soft[2][0]) is nn.ConvTranspose2d and type(soft[4]) is nn.Conv2d


def test_bad_arguments():
    with pytest.raises(TypeError, match="'model'"):
        softrep.from_torch_module(torch.ones(2))
    with pytest.raises(TypeError, match="'strict'"):
        softrep.from_torch_module(nn.Linear(2, 2), strict="yes")
    # an already converted model converts to an equal copy
    soft = softrep.from_torch_module(nn.Linear(2, 2))
    again = softrep.from_torch_module(soft)
    assert type(again) is snn.Linear and softrep.fingerprint(again) == softrep.fingerprint(soft)


def test_transformer_encoder_stack():
    torch.manual_seed(4)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False).eval()
    soft = softrep.from_torch_module(model)
    assert type(soft) is snn.TransformerEncoder and all(type(m) is snn.TransformerEncoderLayer for m in soft.layers)
    x = _x(5, 2, 4, 8)
    mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    with torch.no_grad():
        torch.testing.assert_close(soft(x, mask=mask), model(x, mask=mask), rtol=1e-5, atol=1e-5)
