# softrep: no kernels
"""Record and replay every source of randomness a program consumes (docs/replay.md).

    with softrep.record("run.softrep-replay"):
        main()                      # draws from random, NumPy, torch, os.urandom, ...

    with softrep.replay("run.softrep-replay"):
        main()                      # the same draws, or ReplayDivergenceError

From the command line, without changing the script:

    python -m softrep record --log run.softrep-replay train.py --epochs 3
    python -m softrep replay --log run.softrep-replay train.py --epochs 3
"""

from .logfile import MAGIC, VERSION, ReplayLogError
from .session import ReplayDivergenceError, record, replay

__all__ = ["record", "replay", "ReplayDivergenceError", "ReplayLogError", "MAGIC", "VERSION"]
