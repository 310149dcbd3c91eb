"""``compile = true``: a neutral hyperparameter of every off-policy and offline cell, translated into both
backends' settings; the gradient step goes through ``torch.compile``, its compile time is reported, and
inductor's cache lives in rlplug's data directory.

Compiling with inductor takes minutes per cell on a small CPU, so the cells here compile with dynamo's
``eager`` backend (the same tracing, graph breaks and guards, without code generation): what these
tests check is the wiring, training and resuming. ``benchmarks/compile_gains.py`` compiles every cell
with inductor and measures it.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

import rlplug  # noqa: E402
from rlplug.backends.common import compile as compiling  # noqa: E402

TINY = ["hidden_sizes=[16,16]", "learning_starts=64", "batch_size=32", "log_every=64"]


@pytest.fixture
def dynamo_eager(monkeypatch):
    """``torch.compile`` with dynamo's ``eager`` backend, whatever the caller asked for (its mode recorded)."""
    real, modes = torch.compile, []

    def compile_eagerly(fn, mode=None, fullgraph=False, **_):
        modes.append(mode)
        return real(fn, backend="eager", fullgraph=fullgraph)

    monkeypatch.setattr(torch, "compile", compile_eagerly)
    torch._dynamo.reset()
    yield modes
    torch._dynamo.reset()


@pytest.mark.parametrize("algorithm", ["sac", "td3", "dqn", "iql", "cql"])
def test_compile_is_declared_once_and_off_by_default(algorithm):
    spec = rlplug.session().host.algorithm(algorithm)
    param = spec.param_map["compile"]
    assert param.default is False and set(spec.backends) == {"skrl", "torchrl"}
    with pytest.raises(rlplug.errors.RecipeError):
        rlplug.resolve(f"{algorithm}-pendulum" if algorithm in ("sac", "td3") else "dqn-cartpole", ["compile=fast"])


@pytest.mark.parametrize("recipe, backend", [("td3-pendulum", "skrl"), ("dqn-cartpole", "torchrl")])
def test_compiled_cell_trains_reports_compile_time_and_resumes(recipe, backend, dynamo_eager, tmp_path):
    build = rlplug.build(recipe, backend=backend, overrides=[*TINY, "compile=true"])
    assert build.settings["compile"] is True and build.trainer.compile_seconds is None
    build.trainer.train(160)
    assert build.trainer.gradient_steps > 0 and build.trainer.compile_seconds > 0
    assert dynamo_eager and set(dynamo_eager) == {"default"}  # CPU: inductor's default mode, no CUDA graphs
    from rlplug.runs.summary import add_update_rate

    summary = {"steps_per_second": 1.0}
    add_update_rate(summary, build.trainer, 0, 1.0)
    assert summary["compile_seconds"] == build.trainer.compile_seconds
    path = tmp_path / "ckpt.pt"
    rlplug.save(build, path)
    resumed = rlplug.load(rlplug.build(recipe, backend=backend, overrides=[*TINY, "compile=true"]), path)
    assert resumed.trainer.env_steps == build.trainer.env_steps
    resumed.trainer.train(2 * build.trainer.env_steps)
    assert resumed.trainer.gradient_steps > build.trainer.gradient_steps and resumed.trainer.compile_seconds > 0
    build.trainer.close(), resumed.trainer.close()


def test_uncompiled_cells_report_no_compile_time():
    build = rlplug.build("td3-pendulum", backend="torchrl", overrides=TINY)
    assert build.settings["compile"] is False and build.trainer.compile_seconds is None
    summary = {"steps_per_second": 1.0}
    from rlplug.runs.summary import add_update_rate

    add_update_rate(summary, build.trainer, 0, 1.0)
    assert "compile_seconds" not in summary
    build.trainer.close()


def test_inductor_cache_lives_in_the_data_dir_unless_the_user_chose_one(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "")
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path))
    assert compiling.use_inductor_cache() == str(tmp_path / "_inductor-cache") == os.environ["TORCHINDUCTOR_CACHE_DIR"]
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert compiling.use_inductor_cache() == str(tmp_path / "mine")
    monkeypatch.delenv("RLPLUG_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert compiling.inductor_cache_dir() == tmp_path / "xdg" / "rlplug" / "inductor-cache"
    assert compiling.compile_mode("cuda:0") == "reduce-overhead" and compiling.compile_mode("cpu") == "default"


def test_compiled_step_counts_only_calls_that_compiled(dynamo_eager):
    step = compiling.CompiledStep(lambda x: (x * 2).sum(), "cpu")
    assert step.compile_seconds is None
    x = torch.ones(3)
    assert step(x).item() == 6.0
    first = step.compile_seconds
    assert first > 0
    step(x)
    assert step.compile_seconds == first  # a cached graph: no compile time added
