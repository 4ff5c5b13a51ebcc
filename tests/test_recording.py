# softrep: no kernels
"""softrep.record / softrep.replay (docs/replay.md).

The reference for "the same randomness" is the script's own output: a replayed
run must print exactly what the recorded run printed (and a plain rerun must
not), with the record and the replay in two separate processes.
"""

import importlib.util
import json
import os
import random
import subprocess
import sys
import time
import types

import numpy as np
import pytest
import torch

import softrep
from softrep.tools import recording as recording
from softrep.tools.recording import cli, hooks, logfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "data", "recording", "all_sources.py")


def _load_script():
    spec = importlib.util.spec_from_file_location("all_sources", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return _load_script()


def _run(args, cwd, hash_seed=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONHASHSEED", None)  # each process hashes strings its own way unless `replay` fixes it
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    return subprocess.run([sys.executable] + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _line_of(text, occurrence=0):
    """The line number of the occurrence-th line of the script that contains `text`."""
    with open(SCRIPT) as f:
        return [number for number, line in enumerate(f, 1) if text in line][occurrence]


# --------------------------------------------------------------------------- two processes, via the CLI


def test_cli_record_and_replay_in_two_processes_give_the_same_outputs(tmp_path, script):
    log = str(tmp_path / "run.softrep-replay")
    workdir = tmp_path / "work"
    workdir.mkdir()
    # The recording runs with a given PYTHONHASHSEED (when it is not set, `record`
    # picks one: test_record_picks_a_hash_seed); the replay is started without one.
    recorded = _run(["-m", "softrep", "record", "--log", log, SCRIPT, "base", "7"], cwd=str(workdir),
                    hash_seed="1234567")
    assert recorded.returncode == 7, recorded.stderr  # the script's exit code is propagated
    replayed = _run(["-m", "softrep", "replay", "--log", log, SCRIPT, "base", "7"], cwd=str(workdir))
    assert replayed.returncode == 7, replayed.stderr

    first, second = (json.loads(p.stdout.strip().splitlines()[-1]) for p in (recorded, replayed))
    assert second == first
    # The script ran as `python script.py` runs it.
    assert first["name"] == "__main__"
    assert first["argv"] == [SCRIPT, "base", "7"]
    assert first["cwd"] == str(workdir)
    assert first["path0"] == os.path.dirname(SCRIPT)
    # String hashing (set order) is fixed by the recorded PYTHONHASHSEED.
    header, _, _ = logfile.read(log)
    assert header["hash_seed"] == "1234567"
    # A plain run (this process, no replay) gets something else from every source;
    # torch included: its CPU generator starts from a non-deterministic seed.
    plain = script.main()
    for key in ("random", "randint", "numpy_legacy", "numpy_normal", "random_instance", "shuffle",
                "system_random", "secrets", "urandom", "default_rng", "torch_seed", "torch", "fingerprint"):
        assert plain[key] != first[key], key

    with open(log) as f:
        assert f.readline() == "softrep-replay 1\n"


def test_record_picks_a_hash_seed_and_replay_uses_the_recorded_one(tmp_path, monkeypatch):
    class Exec(Exception):
        pass

    calls = []

    def fake_execve(path, argv, env):
        calls.append((argv, env.get("PYTHONHASHSEED")))
        raise Exec

    monkeypatch.setattr(os, "execve", fake_execve)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__spec__=types.SimpleNamespace(
        name="softrep.__main__")))
    log = str(tmp_path / "run.log")
    with pytest.raises(Exec):
        cli.record_main(["--log", log, SCRIPT, "base"])
    argv, seed = calls[-1]
    assert argv[-7:] == ["-m", "softrep", "record", "--log", log, SCRIPT, "base"]
    assert 1 <= int(seed) <= 4294967295
    monkeypatch.setenv("PYTHONHASHSEED", seed)  # as in the re-executed process: no second re-exec
    with softrep.record(log):
        pass
    monkeypatch.delenv("PYTHONHASHSEED")
    with pytest.raises(Exec):
        cli.replay_main(["--log", log, SCRIPT, "base"])
    assert calls[-1] == (calls[-1][0][:-7] + ["-m", "softrep", "replay", "--log", log, SCRIPT, "base"], seed)


# --------------------------------------------------------------------------- in-process


def test_context_manager_replays_every_source(tmp_path, script):
    log = tmp_path / "run.log"
    with softrep.record(log):
        first = script.main()
    with softrep.replay(log):
        second = script.main()
    plain = script.main()
    assert second == first
    assert plain["fingerprint"] != first["fingerprint"]
    assert plain["torch_seed"] != first["torch_seed"]


def test_seeded_generators_and_the_softrep_generator_replay(tmp_path):
    def program():
        rng = np.random.default_rng(42)
        g = torch.Generator().manual_seed(3)
        random.seed(11)
        gen = softrep.Generator(5)
        return [rng.integers(0, 100, 5).tolist(), torch.rand(3, generator=g).tolist(), random.random(),
                gen.next_offset(), softrep.ops.generator.default_generator.next_offset(), torch.initial_seed()]

    log = tmp_path / "seeded.log"
    softrep.ops.generator.default_generator.next_offset()
    with softrep.record(log):
        first = program()
    softrep.ops.generator.default_generator.next_offset()  # replay restores the softrep default generator too
    with softrep.replay(log):
        second = program()
    assert second == first
    assert first[0] == np.random.default_rng(42).integers(0, 100, 5).tolist()


@pytest.mark.parametrize("variant, recorded_at, current_at", [
    # (text, occurrence): the base branch comes after the variant's branch in the script
    ("order", ('out["randint"] = random.randint', 1), ('out["numpy_legacy"] = np.random.rand(3)', 0)),
    ("extra", ("uniform = torch.rand(4)", 0), ("torch.rand(1)", 0)),
    ("site", ("perm = torch.randperm(6)", 1), ("perm = torch.randperm(6)", 0)),
])
def test_divergence_names_the_event_and_both_call_sites(tmp_path, script, variant, recorded_at, current_at):
    log = tmp_path / "run.log"
    with softrep.record(log):
        script.main("base")
    with pytest.raises(softrep.ReplayDivergenceError) as info:
        with softrep.replay(log):
            script.main(variant)
    error = info.value
    recorded_site = f"all_sources.py:{_line_of(*recorded_at)}"
    current_site = f"all_sources.py:{_line_of(*current_at)}"
    assert error.recorded["site"].endswith("/" + recorded_site)
    assert error.current["site"].endswith("/" + current_site)
    assert recorded_site in str(error) and current_site in str(error)
    assert f"event #{error.index}" in str(error) and error.index > 0


@pytest.mark.parametrize("swap, source", [(False, "numpy.random.Generator.normal"),
                                          (True, "softrep.Generator.next_offset")])
def test_draws_of_numpy_generators_and_softrep_generators_are_checked(tmp_path, swap, source):
    def program(order):
        rng = np.random.default_rng()
        gen = softrep.Generator(7)
        steps = [lambda: rng.random(2), lambda: rng.normal(size=2), lambda: gen.next_offset()]
        if order == "swapped":
            steps = [steps[0], steps[2], steps[1]] if swap else [steps[1], steps[0], steps[2]]
        return [step() for step in steps]

    log = tmp_path / "run.log"
    with softrep.record(log):
        first = program("base")
    with softrep.replay(log):
        assert repr(program("base")) == repr(first)
    with pytest.raises(softrep.ReplayDivergenceError, match=source):
        with softrep.replay(log):
            program("swapped")


def test_fewer_draws_fail_when_the_block_ends(tmp_path, script):
    log = tmp_path / "run.log"
    with softrep.record(log):
        script.main("base")
    with pytest.raises(softrep.ReplayDivergenceError, match="the program stopped after") as info:
        with softrep.replay(log):
            script.main("fewer")
    assert info.value.current is None
    last_line = _line_of('out["last"] = random.random()')
    assert info.value.recorded["site"].endswith(f"/all_sources.py:{last_line}")


def test_a_caught_divergence_still_fails_the_replay(tmp_path):
    log = tmp_path / "run.log"
    with softrep.record(log):
        random.random()
    with pytest.raises(softrep.ReplayDivergenceError):
        with softrep.replay(log):
            try:
                np.random.rand()
            except softrep.ReplayDivergenceError:
                pass


def test_a_clock_seed_is_detected_not_replayed_silently(tmp_path):
    def program():
        random.seed(time.time_ns())
        return random.random()

    log = tmp_path / "run.log"
    with softrep.record(log):
        program()
    time.sleep(0.001)
    with pytest.raises(softrep.ReplayDivergenceError, match="seeded with a different value"):
        with softrep.replay(log):
            program()


def test_a_generator_from_outside_the_recording_is_checked_at_first_use(tmp_path):
    outside = random.Random(1)
    torch_outside = torch.Generator()

    def program():
        return outside.random(), torch.rand(2, generator=torch_outside)

    log = tmp_path / "run.log"
    with softrep.record(log):
        program()
    # `outside` was advanced by the recorded run: at its first use in the replay
    # it is in another state, which the replay reports instead of drawing other values.
    with pytest.raises(softrep.ReplayDivergenceError, match="different state at its first use"):
        with softrep.replay(log):
            program()

    def torch_program():
        return torch.rand(2, generator=torch_outside)

    with softrep.record(log):
        torch_program()
    torch_outside.seed()  # torch.Generator.seed() cannot be hooked (a C type): its effect is caught instead
    with pytest.raises(softrep.ReplayDivergenceError, match="torch.aten.rand"):
        with softrep.replay(log):
            torch_program()


def test_the_cli_replay_reports_a_divergence_with_exit_code_3(tmp_path, capsys):
    log = str(tmp_path / "run.log")
    assert cli.record_main(["--log", log, SCRIPT, "base"]) == 0
    assert cli.replay_main(["--log", log, SCRIPT, "base"]) == 0
    assert cli.replay_main(["--log", log, SCRIPT, "order"]) == cli.DIVERGED
    err = capsys.readouterr().err
    assert "ReplayDivergenceError" in err and f"all_sources.py:{_line_of('np.random.rand(3)')}" in err


# --------------------------------------------------------------------------- the log file


def _draws():
    random.random()
    os.urandom(4)


def _recorded(tmp_path):
    log = tmp_path / "run.log"
    with softrep.record(log):
        _draws()
    return log


def test_a_missing_log_is_a_clear_error(tmp_path):
    with pytest.raises(softrep.ReplayLogError, match="no replay log at"):
        with softrep.replay(tmp_path / "absent.log"):
            pass
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with softrep.record(tmp_path / "no" / "such" / "dir.log"):
            pass


@pytest.mark.parametrize("edit, message", [
    (lambda data: b"not a log\n" + data, "is not a softrep replay log"),
    (lambda data: data.replace(b"softrep-replay 1\n", b"softrep-replay 99\n", 1), "version 99"),
    (lambda data: data.replace(b'"n":4', b'"n":5', 1), "corrupted"),
    (lambda data: data[: len(data) // 2], "truncated"),
    (lambda data: data[: data.rstrip(b"\n").rfind(b"\n") + 1], "truncated or corrupted"),
])
def test_a_bad_log_is_a_clear_error_before_anything_runs(tmp_path, edit, message):
    log = _recorded(tmp_path)
    log.write_bytes(edit(log.read_bytes()))
    before = random.random
    with pytest.raises(softrep.ReplayLogError, match=message):
        with softrep.replay(log):
            pytest.fail("the block must not run")
    assert random.random is before


def test_log_layout(tmp_path):
    header, events, trailer = logfile.read(_recorded(tmp_path))
    assert header["python"] and header["torch"] == torch.__version__ and "states" in header
    assert [e["src"] for e in events] == ["random.Random.random", "os.urandom"]
    assert len(bytes.fromhex(events[1]["data"])) == 4 == events[1]["n"]
    assert trailer["events"] == 2 and trailer["status"] == "ok"


def test_versions_and_string_hashing_that_differ_are_reported(tmp_path):
    log = _recorded(tmp_path)
    header, events, trailer = logfile.read(log)
    header["str_hash"] += 1
    header["numpy"] = "0.0.1"
    logfile.write(log, header, events, trailer["status"])
    with pytest.warns(RuntimeWarning) as caught:
        with softrep.replay(log):
            _draws()
    messages = " ".join(str(w.message) for w in caught)
    assert "hashes strings differently" in messages and "numpy 0.0.1" in messages


# --------------------------------------------------------------------------- restoring


def _patched_names():
    return {
        "random.random": random.random, "random.seed": random.seed, "random.getrandbits": random.getrandbits,
        "random._urandom": random._urandom, "os.urandom": os.urandom,
        "Random.random": vars(random.Random).get("random"), "Random.getrandbits": vars(random.Random).get("getrandbits"),
        "Random.seed": vars(random.Random)["seed"],
        "np.random.rand": np.random.rand, "np.random.seed": np.random.seed, "np.random.default_rng": np.random.default_rng,
        "torch.seed": torch.seed, "torch.manual_seed": torch.manual_seed, "torch.random.seed": torch.random.seed,
        "torch.cuda.seed": torch.cuda.seed, "torch.cuda.manual_seed_all": torch.cuda.manual_seed_all,
        "softrep.Generator.next_offset": vars(softrep.Generator)["next_offset"],
        "dispatch modes": torch._C._len_torch_dispatch_stack(),
    }


def test_every_patched_function_is_restored_after_the_block_and_after_an_exception(tmp_path):
    before = _patched_names()
    with softrep.record(tmp_path / "a.log"):
        inside = _patched_names()
    assert _patched_names() == before
    assert all(inside[k] != before[k] for k in before), [k for k in before if inside[k] == before[k]]

    def draw_then_fail():
        random.random()
        return 1 / 0

    with pytest.raises(ZeroDivisionError):
        with softrep.record(tmp_path / "b.log"):
            draw_then_fail()
    assert _patched_names() == before
    with pytest.raises(ZeroDivisionError):
        with softrep.replay(tmp_path / "b.log"):
            draw_then_fail()
    assert _patched_names() == before
    with pytest.raises(softrep.ReplayDivergenceError):
        with softrep.replay(tmp_path / "b.log"):
            os.urandom(1)
    assert _patched_names() == before
    assert vars(random.Random).get("random") is None  # inherited from _random.Random again, not shadowed


def test_sessions_do_not_nest(tmp_path):
    with softrep.record(tmp_path / "a.log"):
        with pytest.raises(RuntimeError, match="already active"):
            with softrep.record(tmp_path / "b.log"):
                pass
    assert hooks._SESSION is None
