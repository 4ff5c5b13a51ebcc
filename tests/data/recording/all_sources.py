# softrep: no kernels
"""An unseeded script that draws from every source softrep.record captures.

`python all_sources.py [VARIANT] [EXIT_CODE]` prints one JSON line with what it
drew and a softrep.fingerprint of a tensor built from all of it, then exits
with EXIT_CODE (default 0).  VARIANT (default "base") changes how it consumes
randomness, for the divergence tests: "order" (two draws swapped), "extra" (one
more torch draw), "fewer" (one Python draw less at the end), "site" (the same
draw from another line).
"""

import json
import os
import random
import secrets
import sys

import numpy as np
import torch

import softrep


def main(variant="base"):
    out = {"name": __name__, "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0]}
    out["random"] = random.random()
    out["set_order"] = list({"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"})
    if variant == "order":
        out["numpy_legacy"] = np.random.rand(3).tolist()
        out["randint"] = random.randint(0, 10**9)
    else:
        out["randint"] = random.randint(0, 10**9)
        out["numpy_legacy"] = np.random.rand(3).tolist()
    out["numpy_normal"] = np.random.randn(2).tolist()
    rng = random.Random()
    out["random_instance"] = [rng.random(), rng.gauss(0.0, 1.0)]
    items = list(range(10))
    rng.shuffle(items)
    out["shuffle"] = items
    out["system_random"] = random.SystemRandom().random()
    out["secrets"] = [secrets.token_hex(8), secrets.randbelow(10**6)]
    out["urandom"] = os.urandom(8).hex()
    out["default_rng"] = np.random.default_rng().normal(size=3).tolist()
    before_seed = torch.rand(2)
    out["torch_seed"] = torch.seed()
    out["initial_seed"] = torch.initial_seed()
    if variant == "extra":
        torch.rand(1)
    uniform = torch.rand(4)
    normal = torch.randn(4)
    if variant == "site":
        perm = torch.randperm(6)
    else:
        perm = torch.randperm(6)
    dropped = torch.nn.functional.dropout(torch.ones(8), p=0.5)
    out["torch"] = [before_seed.tolist(), uniform.tolist(), normal.tolist(), perm.tolist(), dropped.tolist()]
    if variant != "fewer":
        out["last"] = random.random()

    floats = [out["random"], out["randint"], *out["numpy_legacy"], *out["numpy_normal"], *out["random_instance"],
              *out["shuffle"], out["system_random"], int(out["secrets"][0], 16), out["secrets"][1],
              int(out["urandom"], 16), *out["default_rng"], out["torch_seed"], out.get("last", 0.0)]
    tensor = torch.cat([torch.tensor(floats, dtype=torch.float64), before_seed.double(), uniform.double(),
                        normal.double(), perm.double(), dropped.double()])
    out["fingerprint"] = softrep.fingerprint(tensor)
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:2])))
    sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
