# softrep: no kernels
"""The hooks on each source of randomness (docs/replay.md, "What is captured").

Two kinds of hook, one general mechanism each:

* entropy hooks replace a non-deterministic input (os.urandom, the urandom
  behind random.SystemRandom / secrets / NumPy's SeedSequence, an unseeded
  random.Random, torch.seed, torch.cuda.seed) by bytes that the session
  supplies: drawn from the system and written to the log when recording, read
  back from the log when replaying;
* consumption hooks report every draw from a deterministic generator (source,
  generator, call site, amount) and every explicit seeding call (a digest of the
  seed), so that a replayed program that draws in a different order, from a
  different place, more or fewer times, or seeded differently is stopped at the
  first difference instead of silently computing something else.

Every hook calls `_SESSION` (the active recording or replay); `install`
returns a `Patches` object whose `restore()` puts every original back.
"""

import hashlib
import os
import random
import secrets
import struct
import sys
import threading

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...ops import generator as softrep_random

_os_urandom = os.urandom  # the system's, captured before any patching
_SESSION = None  # the active recording or replay (set by install, cleared by Patches.restore)
_local = threading.local()


def _forget_session_in_child():
    # A forked child (DataLoader worker, multiprocessing) is not recorded: its
    # hooks see no session and call the originals (docs/replay.md, Limitations).
    global _SESSION
    _SESSION = None


os.register_at_fork(after_in_child=_forget_session_in_child)  # depth > 0 while a hook runs its original: nested draws are not events


def _depth():
    return getattr(_local, "depth", 0)


class _Inside:
    """Marks the current thread as inside a hook: the original function's own
    internal draws and seeding calls are part of this one event."""

    def __enter__(self):
        _local.depth = _depth() + 1

    def __exit__(self, *exc):
        _local.depth -= 1


inside = _Inside()


# --------------------------------------------------------------------------- call sites


def _package_dir(module):
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


_SOFTREP_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_INTERNAL_DIRS = (_package_dir(np), _package_dir(torch), _SOFTREP_DIR)
_INTERNAL_FILES = {os.path.abspath(random.__file__), os.path.abspath(secrets.__file__)}


def _is_internal(filename):
    if filename.startswith("<frozen"):
        return True
    path = os.path.abspath(filename)
    return path in _INTERNAL_FILES or path.startswith(_INTERNAL_DIRS)


def _display_path(filename):
    """The file's path relative to the sys.path entry or working directory that
    gives the shortest one, so that the same program gives the same sites on
    another machine or in another checkout."""
    path = os.path.abspath(filename)
    best = path
    for root in [os.getcwd()] + [p for p in sys.path if p and os.path.isdir(p)]:
        rel = os.path.relpath(path, os.path.abspath(root))
        if not rel.startswith(os.pardir) and len(rel) < len(best):
            best = rel
    return best.replace(os.sep, "/")


class Sites:
    def __init__(self):
        self._internal = {}
        self._display = {}

    def current(self):
        """'file:line' of the innermost frame outside the random, secrets,
        NumPy, torch and softrep sources: the user's line that asked for randomness."""
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            internal = self._internal.get(filename)
            if internal is None:
                internal = self._internal[filename] = _is_internal(filename)
            if not internal:
                shown = self._display.get(filename)
                if shown is None:
                    shown = self._display[filename] = _display_path(filename)
                return f"{shown}:{frame.f_lineno}"
            frame = frame.f_back
        return "<unknown>"


# --------------------------------------------------------------------------- digests


def _canonical(obj, out):
    if isinstance(obj, dict):
        out.append(b"{")
        for key in sorted(obj, key=str):
            _canonical(key, out)
            _canonical(obj[key], out)
        out.append(b"}")
    elif isinstance(obj, (list, tuple)):
        out.append(b"[")
        for item in obj:
            _canonical(item, out)
        out.append(b"]")
    elif isinstance(obj, np.ndarray):
        out.append(f"ndarray{obj.dtype.str}{obj.shape}".encode() + np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        out.append(f"tensor{t.dtype}{tuple(t.shape)}".encode() + t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, float):
        out.append(b"f" + obj.hex().encode())
    elif isinstance(obj, (bytes, bytearray)):
        out.append(b"b" + struct.pack("<Q", len(obj)) + bytes(obj))
    else:
        text = repr(obj).encode()
        out.append(type(obj).__name__.encode() + struct.pack("<Q", len(text)) + text)
    out.append(b";")


def digest(obj):
    """A 64-bit hex digest of a seed or a generator state (exact: floats by their bits)."""
    parts = []
    _canonical(obj, parts)
    return hashlib.sha256(b"".join(parts)).hexdigest()[:16]


# --------------------------------------------------------------------------- generator states


def _python_state():
    version, internal, gauss_next = random.getstate()
    return [version, list(internal), None if gauss_next is None else gauss_next.hex()]


def _set_python_state(state):
    version, internal, gauss_next = state
    random.setstate((version, tuple(internal), None if gauss_next is None else float.fromhex(gauss_next)))


def _numpy_state():
    state = np.random.mtrand._rand.get_state(legacy=False)
    return {"bit_generator": state["bit_generator"],
            "key": [int(k) for k in state["state"]["key"]], "pos": int(state["state"]["pos"]),
            "has_gauss": int(state["has_gauss"]), "gauss": float(state["gauss"]).hex()}


def _set_numpy_state(state):
    np.random.mtrand._rand.set_state({
        "bit_generator": state["bit_generator"],
        "state": {"key": np.array(state["key"], dtype=np.uint32), "pos": state["pos"]},
        "has_gauss": state["has_gauss"], "gauss": float.fromhex(state["gauss"])})


def _cuda_ready():
    return hasattr(torch, "cuda") and torch.cuda.is_available()


def snapshot_states():
    """The state of every global generator at the start of a recording (header "states")."""
    return {
        "python_random": _python_state(),
        "numpy_legacy": _numpy_state(),
        "torch_cpu": torch.get_rng_state().numpy().tobytes().hex(),
        "torch_cuda": ([s.numpy().tobytes().hex() for s in torch.cuda.get_rng_state_all()]
                       if _cuda_ready() else None),
        "softrep": list(softrep_random.default_generator.get_state()),
    }


def restore_states(states):
    """Put every global generator in the state it had when the recording started.
    Returns a list of warnings (CUDA device counts that differ)."""
    notes = []
    _set_python_state(states["python_random"])
    _set_numpy_state(states["numpy_legacy"])
    torch.set_rng_state(torch.frombuffer(bytearray.fromhex(states["torch_cpu"]), dtype=torch.uint8))
    recorded_cuda = states.get("torch_cuda")
    if recorded_cuda is not None and _cuda_ready():
        count = torch.cuda.device_count()
        for index, hexstate in enumerate(recorded_cuda[:count]):
            torch.cuda.set_rng_state(torch.frombuffer(bytearray.fromhex(hexstate), dtype=torch.uint8), index)
        if count != len(recorded_cuda):
            notes.append(f"the recording saw {len(recorded_cuda)} CUDA devices, this process sees {count}: "
                         f"only the generators of the first {min(count, len(recorded_cuda))} were restored")
    elif recorded_cuda is not None:
        notes.append(f"the recording saw {len(recorded_cuda)} CUDA devices, this process sees none")
    softrep_random.default_generator.set_state(tuple(states["softrep"]))
    return notes


# --------------------------------------------------------------------------- patching


class Patches:
    """setattr with an undo list; restore() undoes in reverse order."""

    def __init__(self):
        self._undo = []
        self.mode = None

    def set(self, owner, name, value):
        if isinstance(owner, type):
            had = name in vars(owner)
            old = vars(owner).get(name)
        else:
            had, old = True, getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append((owner, name, had, old))

    def restore(self):
        global _SESSION
        try:
            if self.mode is not None:
                mode, self.mode = self.mode, None
                mode.__exit__(None, None, None)
        finally:
            while self._undo:
                owner, name, had, old = self._undo.pop()
                if had:
                    setattr(owner, name, old)
                else:
                    delattr(owner, name)
            _SESSION = None


def _event(src, site, n, gen=None, state=None, seed=None):
    return {"src": src, "site": site, "n": n, "gen": gen, "state": state, "seed": seed}


def _amount(result, args):
    """How many values a NumPy call drew: the size of its result, or of the
    sequence it shuffled in place."""
    if isinstance(result, (bytes, bytearray)):
        return len(result)
    if result is not None:
        return int(np.size(result))
    if args and hasattr(args[0], "__len__"):
        return len(args[0])
    return 0


# ---- entropy


def _entropy_hook(src, original):
    def hook(n):
        session = _SESSION
        if session is None:
            return original(n)
        return session.entropy(src, session.sites.current(), n, original)

    hook.__wrapped__ = original
    return hook


def _entropy_int(session, src, site, nbytes):
    return int.from_bytes(session.entropy(src, site, nbytes, _os_urandom), "little")


# ---- Python's random


def _install_python_random(patches):
    Random = random.Random
    c_random = Random.random  # the C methods of _random.Random
    c_getrandbits = Random.getrandbits
    py_seed = vars(Random)["seed"]

    def state_of(rng):
        return lambda: rng.getstate()

    def random_(self):
        session = _SESSION
        if session is None or _depth():
            return c_random(self)
        gen, state = session.generator(self, state_of(self))
        session.consume(_event("random.Random.random", session.sites.current(), 1, gen, state))
        return c_random(self)

    def getrandbits(self, k):
        session = _SESSION
        if session is None or _depth():
            return c_getrandbits(self, k)
        gen, state = session.generator(self, state_of(self))
        session.consume(_event("random.Random.getrandbits", session.sites.current(), k, gen, state))
        return c_getrandbits(self, k)

    def seed(self, a=None, version=2):
        session = _SESSION
        if session is None or _depth():
            return py_seed(self, a, version)
        site = session.sites.current()
        gen, _ = session.generator(self, None)
        session.consume(_event("random.Random.seed", site, 0, gen, seed=digest(a)))
        if a is None:
            # CPython seeds from the OS inside C, out of reach of os.urandom: use
            # 256 recorded bits instead (an int seed of any size is accepted).
            a = _entropy_int(session, "random.Random.seed(None)", site, 32)
        with inside:
            return py_seed(self, a, version)

    patches.set(Random, "random", random_)
    patches.set(Random, "getrandbits", getrandbits)
    patches.set(Random, "seed", seed)
    # The module-level functions are bound methods of random._inst captured at
    # import; these three bypass the class attributes, the others go through them.
    patches.set(random, "random", lambda: random._inst.random())
    patches.set(random, "getrandbits", lambda k: random._inst.getrandbits(k))
    patches.set(random, "seed", lambda a=None, version=2: random._inst.seed(a, version))
    patches.set(random, "_urandom", _entropy_hook("random._urandom", random._urandom))
    patches.set(os, "urandom", _entropy_hook("os.urandom", os.urandom))


# ---- NumPy


def _numpy_method_hook(src, method, owner_of):
    def hook(*args, **kwargs):
        session = _SESSION
        if session is None or _depth():
            return method(*args, **kwargs)
        owner = owner_of(args)
        site = session.sites.current()
        gen, state = session.generator(owner, lambda: owner.bit_generator.state if hasattr(owner, "bit_generator")
                                       else owner.get_state(legacy=False))
        with inside:
            result = method(*args, **kwargs)
        session.consume(_event(src, site, _amount(result, args[1:] if owner_of is _self_arg else args), gen, state))
        return result

    return hook


def _self_arg(args):
    return args[0]


def _tracked_generator_class():
    """A subclass of numpy.random.Generator whose draws are events.
    default_rng() returns it while a recording or replay is active."""
    names = {}
    for name in dir(np.random.Generator):
        if name.startswith("_") or name in ("bit_generator", "spawn"):
            continue
        method = getattr(np.random.Generator, name)
        if callable(method):
            names[name] = _numpy_method_hook(f"numpy.random.Generator.{name}", method, _self_arg)
    names["__module__"] = __name__
    names["__doc__"] = "numpy.random.Generator whose draws softrep.record / softrep.replay check."
    return type("Generator", (np.random.Generator,), names)


TrackedGenerator = _tracked_generator_class()


def _install_numpy(patches):
    legacy = np.random.mtrand._rand
    for name in dir(np.random):
        method = getattr(np.random, name)
        if getattr(method, "__self__", None) is not legacy or name in ("get_state", "set_state", "seed"):
            continue
        patches.set(np.random, name, _numpy_method_hook(f"numpy.random.{name}", method, lambda args: legacy))

    legacy_seed = np.random.seed

    def seed(seed=None):
        session = _SESSION
        if session is None or _depth():
            return legacy_seed(seed)
        gen, _ = session.generator(legacy, None)
        session.consume(_event("numpy.random.seed", session.sites.current(), 0, gen, seed=digest(seed)))
        with inside:  # seed=None draws its entropy through random._urandom: an entropy event
            return legacy_seed(seed)

    default_rng = np.random.default_rng

    def tracked_default_rng(seed=None):
        session = _SESSION
        if session is None or _depth() or isinstance(seed, np.random.Generator):
            return default_rng(seed)
        session.consume(_event("numpy.random.default_rng", session.sites.current(), 0,
                               seed=digest(seed if not isinstance(seed, np.random.BitGenerator)
                                           else seed.state)))
        with inside:
            bit_generator = default_rng(seed).bit_generator
        rng = TrackedGenerator(bit_generator)
        session.generator(rng, None)
        return rng

    patches.set(np.random, "seed", seed)
    patches.set(np.random, "default_rng", tracked_default_rng)


# ---- torch


def _seed_hook(src, original):
    def hook(seed):
        session = _SESSION
        if session is None or _depth():
            return original(seed)
        session.consume(_event(src, session.sites.current(), 0, seed=digest(int(seed))))
        with inside:
            return original(seed)

    return hook


def _random_seed_hook(src, nbytes, mask, manual_seed, original):
    """torch.seed / torch.cuda.seed(_all): a recorded random seed, then the deterministic seeding call."""

    def hook():
        session = _SESSION
        if session is None:
            return original()
        value = _entropy_int(session, src, session.sites.current(), nbytes) & mask
        with inside:
            manual_seed(value)
        return value

    return hook


_RANDOM_OPS = {}
_WARM = False


def _is_random_op(func):
    found = _RANDOM_OPS.get(func)
    if found is None:
        found = _RANDOM_OPS[func] = (torch.Tag.nondeterministic_seeded in func.tags or any(
            "Generator" in str(arg.type) for arg in func._schema.arguments))
    return found


def _default_generator(device):
    if device.type == "cpu":
        return torch.default_generator
    if device.type == "cuda" and _cuda_ready():
        return torch.cuda.default_generators[device.index if device.index is not None else torch.cuda.current_device()]
    return None


def _op_generator(args, kwargs):
    generator = kwargs.get("generator")
    if generator is not None:
        return generator
    device = kwargs.get("device")
    if device is None:
        for arg in args:
            if isinstance(arg, torch.Tensor):
                device = arg.device
                break
    return _default_generator(torch.device(device) if device is not None else torch.device("cpu"))


class RandomOpMode(TorchDispatchMode):
    """Reports every aten op that draws from a torch generator (tagged
    nondeterministic_seeded, or taking a Generator argument), with the
    generator's initial seed and, at its first use, a digest of its state."""

    @classmethod
    def _should_skip_dynamo(cls):
        # Otherwise torch wraps __torch_dispatch__ in torch._dynamo.disable,
        # whose first call imports torch._dynamo: ~800 modules and seconds of
        # start-up for every recorded or replayed run.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        session = _SESSION
        if session is None or _depth() or not _is_random_op(func):
            return func(*args, **kwargs)
        site = session.sites.current()
        generator = _op_generator(args, kwargs)
        if generator is not None:
            gen, state = session.generator(generator, generator.get_state)
            seed = str(generator.initial_seed())
        else:
            gen = state = seed = None
        result = func(*args, **kwargs)
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        amount = sum(t.numel() for t in outputs if isinstance(t, torch.Tensor))
        session.consume(_event(f"torch.{func}", site, amount, gen, state, seed))
        return result


def _install_torch(patches):
    manual_seed = torch.random.manual_seed
    seed_hook = _seed_hook("torch.manual_seed", manual_seed)
    patches.set(torch, "manual_seed", seed_hook)
    patches.set(torch.random, "manual_seed", seed_hook)
    # torch.seed draws 64 bits from the OS (c10 getNonDeterministicRandom on CPU).
    random_seed = _random_seed_hook("torch.seed", 8, (1 << 64) - 1, manual_seed, torch.random.seed)
    patches.set(torch, "seed", random_seed)
    patches.set(torch.random, "seed", random_seed)
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and hasattr(cuda, "manual_seed"):
        cuda_manual_seed, cuda_manual_seed_all = cuda.manual_seed, cuda.manual_seed_all
        patches.set(cuda, "manual_seed", _seed_hook("torch.cuda.manual_seed", cuda_manual_seed))
        patches.set(cuda, "manual_seed_all", _seed_hook("torch.cuda.manual_seed_all", cuda_manual_seed_all))
        # CUDA generators seed from 53 random bits (exact in a double), as c10 does.
        mask53 = (1 << 53) - 1
        patches.set(cuda, "seed", _random_seed_hook("torch.cuda.seed", 8, mask53, cuda_manual_seed, cuda.seed))
        patches.set(cuda, "seed_all", _random_seed_hook("torch.cuda.seed_all", 8, mask53, cuda_manual_seed_all,
                                                        cuda.seed_all))
    patches.mode = RandomOpMode()
    patches.mode.__enter__()


# ---- softrep's own generator


def _install_softrep(patches):
    Generator = softrep_random.Generator
    next_offset = vars(Generator)["next_offset"]
    manual_seed = vars(Generator)["manual_seed"]

    def tracked_next_offset(self):
        session = _SESSION
        if session is not None and not _depth():
            gen, state = session.generator(self, self.get_state)
            session.consume(_event("softrep.Generator.next_offset", session.sites.current(), 1, gen, state))
        return next_offset(self)

    def tracked_manual_seed(self, seed):
        session = _SESSION
        if session is not None and not _depth():
            gen, _ = session.generator(self, None)
            session.consume(_event("softrep.Generator.manual_seed", session.sites.current(), 0, gen,
                                   seed=digest(seed)))
        return manual_seed(self, seed)

    patches.set(Generator, "next_offset", tracked_next_offset)
    patches.set(Generator, "manual_seed", tracked_manual_seed)


def install(session):
    """Install every hook, reporting to `session`; returns the Patches to restore.
    On an error half way, what was installed is restored before re-raising."""
    global _SESSION
    if _SESSION is not None:
        raise RuntimeError("softrep.record / softrep.replay: a recording or replay is already active "
                           "in this process (they do not nest)")
    global _WARM
    if not _WARM:
        # The first op under a dispatch mode imports hundreds of torch modules
        # (some draw from random and tempfile at import): do it once, outside
        # any session, so that a recording does not contain them and an
        # in-process replay (where they are already imported) still matches.
        with RandomOpMode():
            torch.empty(1).uniform_(generator=torch.Generator())
        _WARM = True
    patches = Patches()
    _SESSION = session
    try:
        _install_python_random(patches)
        _install_numpy(patches)
        _install_softrep(patches)
        _install_torch(patches)  # last: it enters the dispatch mode
    except BaseException:
        patches.restore()
        raise
    return patches
