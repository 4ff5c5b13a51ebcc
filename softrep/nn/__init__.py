# softrep: no kernels
"""softrep.nn: reproducible layers with torch.nn's names (see softrep/nn/modules),
their functional ops (softrep.nn.functional) and initialisers (softrep.nn.init)."""

from . import init  # noqa: F401
from . import functional  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__  # noqa: F401
