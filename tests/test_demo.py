"""The demo and the examples: the published reference fingerprints (README and
softrep/tools/demo.py) are what the demo computes, and the examples run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from softrep.tools import demo as demo

ROOT = Path(__file__).resolve().parents[1]


def _run(args, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_readme_publishes_the_package_reference_values():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("<!-- reference-fingerprints")[1].split("\n\n")[0]
    published = dict(re.findall(r"^\| (initial model|trained model|test logits) \| `([0-9a-f]{64})` \|$",
                                table, re.M))
    assert published == demo.REFERENCE


def test_readme_publishes_the_autocast_reference_values():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("<!-- reference-fingerprints-autocast-bfloat16")[1].split("\n\n")[0]
    published = dict(re.findall(r"^\| (initial model|trained model|test logits) \| `([0-9a-f]{64})` \|$",
                                table, re.M))
    assert published == demo.REFERENCE_AUTOCAST["bfloat16"]


def test_demo_autocast_bfloat16_reproduces_its_fingerprints():
    result = demo.run(progress=False, autocast="bfloat16")
    lines, ok = demo.verdict(result, demo.REFERENCE_AUTOCAST["bfloat16"])
    assert ok, "\n".join(lines)
    assert result["test accuracy"] > 0.9


def test_demo_reproduces_the_reference_fingerprints():
    result = demo.run(progress=False)
    lines, ok = demo.verdict(result)
    assert ok, "\n".join(lines)
    assert result["test accuracy"] > 0.9


def test_verdict_reports_a_mismatch():
    result = dict(demo.REFERENCE, **{"test logits": "0" * 64})
    lines, ok = demo.verdict(result)
    assert not ok and "MISMATCH" in lines[-1] and "DIFFERS" in lines[2]


def test_verdict_names_what_was_compared():
    lines, ok = demo.verdict(dict(demo.REFERENCE))
    assert ok and "published reference fingerprints" in lines[-1]


@pytest.mark.parametrize("args,message", [
    (["--device", "tpu"], "argument --device"),
    (["--epochs", "0"], "argument --epochs"),
])
def test_demo_rejects_bad_arguments(args, message):
    proc = _run(["-m", "softrep", "demo", *args])
    assert proc.returncode == 2 and message in proc.stderr


def test_train_digits_example_is_the_demo():
    proc = _run(["examples/train_digits.py", "--epochs", "1"])
    assert proc.returncode == 0, proc.stderr
    printed = dict(re.findall(r"^(initial model|trained model|test logits)\s+([0-9a-f]{64})$", proc.stdout, re.M))
    expected = demo.run(epochs=1, progress=False)
    assert printed == {k: expected[k] for k in printed} and len(printed) == 3


def test_char_transformer_example_runs_and_is_repeatable():
    outputs = [_run(["examples/char_transformer.py", "--steps", "3"]) for _ in range(2)]
    for proc in outputs:
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"^trained model\s+[0-9a-f]{64}$", proc.stdout, re.M)
    assert outputs[0].stdout == outputs[1].stdout


def test_convert_pretrained_example_agrees_with_torch():
    proc = _run(["examples/convert_pretrained.py"])
    assert proc.returncode == 0, proc.stderr
    max_diff = float(re.search(r"max \|softrep - torch\|\s*: (\S+)", proc.stdout).group(1))
    assert max_diff < 1e-3
