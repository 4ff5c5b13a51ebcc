"""examples/char_transformer.py: its published reference fingerprints are what
it computes, it prints the verdict, and the published copies
(examples/README.md, CHANGELOG.md) equal the values in the example.

The test runs the short published configuration (SHORT_STEPS training steps,
a minute or two on 2 cores); the default 150 steps take several minutes and
are checked by running the example itself.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("initial model", "trained model", "last logits")


def load_example():
    spec = importlib.util.spec_from_file_location("char_transformer", ROOT / "examples" / "char_transformer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = load_example()


def run_example(*args, timeout=900):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "examples/char_transformer.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_reference_covers_the_default_and_the_short_run():
    assert set(example.REFERENCE) == {example.STEPS, example.SHORT_STEPS}
    for values in example.REFERENCE.values():
        assert set(values) == set(NAMES) and all(re.fullmatch(r"[0-9a-f]{64}", v) for v in values.values())
    # the initial model is drawn before training, so both runs start from it
    assert example.REFERENCE[example.STEPS]["initial model"] == example.REFERENCE[example.SHORT_STEPS]["initial model"]


def test_short_run_reproduces_the_published_fingerprints():
    proc = run_example("--steps", str(example.SHORT_STEPS))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = dict(re.findall(r"^(initial model|trained model|last logits)\s+([0-9a-f]{64})$", proc.stdout, re.M))
    assert printed == example.REFERENCE[example.SHORT_STEPS]
    assert "VERDICT: all three fingerprints equal the published reference fingerprints" in proc.stdout


def test_verdict_reports_a_mismatch():
    result = dict(example.REFERENCE[example.SHORT_STEPS], **{"last logits": "0" * 64})
    line, ok = example.verdict(result, example.SHORT_STEPS)
    assert not ok and "MISMATCH" in line and "last logits" in line and "trained model" not in line


def test_verdict_of_an_unpublished_configuration_is_not_comparable():
    line, ok = example.verdict({name: "0" * 64 for name in NAMES}, 3)
    assert ok and "not comparable" in line


def test_examples_readme_publishes_the_reference_values():
    text = (ROOT / "examples" / "README.md").read_text()
    published = {}
    for steps, name, value in re.findall(
            r"^\| (\d+)[^|]*\| (initial model|trained model|last logits) \| `([0-9a-f]{64})` \|$", text, re.M):
        published.setdefault(int(steps), {})[name] = value
    assert published == example.REFERENCE


def test_changelog_lists_the_reference_values():
    section = (ROOT / "CHANGELOG.md").read_text().split("## Published reference fingerprints")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "char_transformer" in line]
    for steps, values in example.REFERENCE.items():
        row = [line for line in rows if f"{steps} steps" in line]
        assert row, f"CHANGELOG.md: no row for char_transformer.py, {steps} steps"
        for value in values.values():  # the last row of a run holds its current values
            assert f"`{value[:8]}…{value[-8:]}`" in row[-1]
