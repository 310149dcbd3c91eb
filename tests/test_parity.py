"""Config parity (issue 30): every argument of a TorchRL class a first-party cell builds, and every field of
an skrl agent config it fills, is a recipe setting with the library's default or excluded with a reason.

Each cell is built on a tiny env (no training); the classes checked are the ones found on the build, so a
class a cell starts using without a table fails here too. The patched-class tests show that a library
upgrade adding an argument (or a config key), or moving a default, is named.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("skrl")

import tiny_envs  # noqa: E402,F401 - registers Tiny-v0 and TinyContinuous-v0
from conftest import write_dataset  # noqa: E402
from rlplug.backends.skrl import parity as skrl_parity  # noqa: E402
from rlplug.pipeline.discovery import FIRST_PARTY  # noqa: E402
from rlplug.backends.torchrl import parity as torchrl_parity  # noqa: E402

PLUGINS = tuple(sorted(name.removeprefix("rlplug-") for name in FIRST_PARTY))  # every first-party plugin, none forgotten

# (algorithm, env, hyperparameter overrides): the default cells, and variants that construct the other
# classes a recipe can reach (multi-step estimators and their slice sampler, memmap storage, the hard
# target update, Ornstein-Uhlenbeck noise, discrete CQL, collection through TorchRL's Collector)
TORCHRL_CELLS = {
    "ppo": ("ppo", "Tiny-v0", {}),
    "sac": ("sac", "TinyContinuous-v0", {}),
    "sac-discrete": ("sac", "Tiny-v0", {}),
    "sac-tdlambda-memmap-hard-ou": ("sac", "TinyContinuous-v0", dict(num_envs=1, value_estimator="td_lambda", replay_storage="memmap",
                                                                     target_update="hard", exploration_noise="ou")),
    "td3": ("td3", "TinyContinuous-v0", {}),
    "td3-ou": ("td3", "TinyContinuous-v0", dict(exploration_noise="ou")),
    "td3-collector": ("td3", "TinyContinuous-v0", dict(settings={"collector": True})),
    "ppo-collector": ("ppo", "Tiny-v0", dict(settings={"collector": True})),
    "ddpg": ("ddpg", "TinyContinuous-v0", {}),
    "dqn": ("dqn", "Tiny-v0", {}),
    "dqn-td1": ("dqn", "Tiny-v0", dict(num_envs=1, value_estimator="td1")),
    "qrdqn": ("qrdqn", "Tiny-v0", {}),
    "c51": ("c51", "Tiny-v0", {}),
    "tqc": ("tqc", "TinyContinuous-v0", {}),
    "redq": ("redq", "TinyContinuous-v0", {}),
    "crossq": ("crossq", "TinyContinuous-v0", {}),
    "iql": ("iql", "TinyContinuous-v0", {}),
    "iql-discrete": ("iql", "Tiny-v0", {}),
    "cql": ("cql", "TinyContinuous-v0", {}),
    "cql-discrete": ("cql", "Tiny-v0", {}),
    "td3bc": ("td3bc", "TinyContinuous-v0", {}),
    "bc": ("bc", "TinyContinuous-v0", {}),
    "bc-discrete": ("bc", "Tiny-v0", {}),
    "mappo": ("mappo", None, {}),
    "ippo": ("ippo", None, {}),
    "qmix": ("qmix", None, {}),
    "qmix-vdn-per-agent": ("qmix", None, {"mixer": "vdn", "share_parameters": False}),
    "a2c": ("a2c", "Tiny-v0", {}),
    "rpo": ("rpo", "TinyContinuous-v0", {}),
    "reinforce": ("reinforce", "Tiny-v0", {}),
    "trpo": ("trpo", "TinyContinuous-v0", {}),
    "trpo-discrete": ("trpo", "Tiny-v0", {}),
    "gail": ("gail", "TinyContinuous-v0", {}),
    "gail-discrete-penalty": ("gail", "Tiny-v0", {"use_grad_penalty": True}),
    "dt": ("dt", "TinyContinuous-v0", {}),
    "odt": ("odt", "TinyContinuous-v0", {}),
}
SKRL_CELLS = {name: TORCHRL_CELLS[name] for name in ("ppo", "sac", "sac-discrete", "td3", "ddpg", "dqn", "qrdqn", "c51", "tqc", "redq", "crossq", "iql", "cql", "cql-discrete", "td3bc",
                                                    "iql-discrete", "bc", "bc-discrete", "mappo", "ippo", "qmix", "qmix-vdn-per-agent", "a2c", "rpo", "reinforce", "trpo", "trpo-discrete",
                                                    "gail", "gail-discrete-penalty", "dt", "odt")}
PLUGIN_OF = {"odt": "rlplug_dt"}  # an algorithm declared by another algorithm's plugin
OFFLINE = ("iql", "cql", "td3bc", "bc", "dt", "odt", "gail")  # by algorithm (iql-discrete is offline too); gail reads demonstrations


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """300-transition random datasets of the tiny envs, for the offline cells."""
    root = tmp_path_factory.mktemp("parity-datasets")
    return {env: write_dataset(root / env, env, steps=300) for env in ("Tiny-v0", "TinyContinuous-v0")}


@pytest.fixture
def cell(builds, datasets):
    """``cell(backend, name)``: the built cell ``name`` of the tables above, closed afterwards."""
    made = []

    def make(backend, name):
        algorithm, env, overrides = (TORCHRL_CELLS if backend == "torchrl" else SKRL_CELLS)[name]
        if algorithm in ("mappo", "ippo", "qmix"):
            pytest.importorskip("mpe2")
            from mappo_builds import make_mappo_build

            made.append(make_mappo_build(backend, algorithm=algorithm, **overrides))
            return made[-1]
        overrides = {"num_envs": 2, **overrides}
        if algorithm in OFFLINE:
            overrides.update(num_envs=1, dataset=datasets[env])
        return builds(PLUGIN_OF.get(algorithm, f"rlplug_{algorithm}"), backend, env, algorithm=algorithm, **overrides)

    yield make
    for build in made:
        build.trainer.close()


def test_every_first_party_cell_is_checked():
    """A new algorithm or backend of a first-party plugin must join the cells above."""
    declared = set()
    for name in PLUGINS:
        for spec in importlib.import_module(f"rlplug_{name}").plugin.rlplug_algorithms():
            declared |= {(spec.name, backend) for backend in spec.backends}
    checked = {(algorithm, "torchrl") for algorithm, _, _ in TORCHRL_CELLS.values()}
    checked |= {(algorithm, "skrl") for algorithm, _, _ in SKRL_CELLS.values()}
    assert declared == checked


@pytest.mark.parametrize("name", TORCHRL_CELLS)
def test_torchrl_cell_has_config_parity(cell, name):
    build = cell("torchrl", name)
    assert torchrl_parity.parity_problems(build) == []
    # the roles a cell of its family builds were all found (a missed attribute would hide a class)
    roles = set(torchrl_parity.constructed(build))
    # behaviour cloning and DT have no value estimator; QR-DQN's own LossModule and C51's DistributionalDQNLoss compute their
    # TD(0) distributional targets themselves
    bootstraps = TORCHRL_CELLS[name][0] not in ("bc", "qrdqn", "c51", "dt", "odt")
    replays = TORCHRL_CELLS[name][0] not in ("dt", "odt")  # DT samples segments of episodes (rlplug's TrajectorySegments)
    expected = {"loss"} | ({"buffer", "storage", "sampler", "writer"} if replays else set())
    assert expected | ({"value_estimator"} if bootstraps else set()) | ({"discriminator_loss"} if name.startswith("gail") else set()) <= roles
    # cells collect on the lean path unless told (or, multi-agent, where it does not apply)
    assert ("collector" in roles) == (name in ("mappo", "ippo", "qmix", "qmix-vdn-per-agent", "td3-collector", "ppo-collector"))


@pytest.mark.parametrize("name", SKRL_CELLS)
def test_skrl_cell_has_config_parity(cell, name):
    assert skrl_parity.parity_problems(cell("skrl", name)) == []


def _with_signature(monkeypatch, cls, signature):
    """``cls.__init__`` patched to declare ``signature`` (what an upgraded TorchRL would declare)."""
    original = cls.__init__

    def __init__(self, *args, **kwargs):
        kwargs.pop("new_option", None)
        original(self, *args, **kwargs)

    __init__.__signature__ = signature
    monkeypatch.setattr(cls, "__init__", __init__)


def test_an_argument_added_by_a_torchrl_upgrade_is_named(cell, monkeypatch):
    from torchrl.objectives import SACLoss

    signature = inspect.signature(SACLoss.__init__)
    extra = inspect.Parameter("new_option", inspect.Parameter.KEYWORD_ONLY, default=None)
    _with_signature(monkeypatch, SACLoss, signature.replace(parameters=[*signature.parameters.values(), extra]))
    found = torchrl_parity.parity_problems(cell("torchrl", "sac"))
    assert found == ["sac/torchrl loss SACLoss.new_option: not in the parity table (off-policy); map it to a recipe setting "
                     "or exclude it with a reason"]  # fmt: skip


def test_a_moved_default_and_a_removed_argument_are_named(cell, monkeypatch):
    from torchrl.objectives import SACLoss

    signature = inspect.signature(SACLoss.__init__)
    kept = [p.replace(default=0.5) if p.name == "alpha_init" else p for p in signature.parameters.values() if p.name != "min_alpha"]
    _with_signature(monkeypatch, SACLoss, signature.replace(parameters=kept))
    found = torchrl_parity.parity_problems(cell("torchrl", "sac"))
    assert found == [
        "sac/torchrl loss SACLoss.alpha_init: recipe default 1.0 (setting 'alpha_init') differs from the library's 0.5",
        "sac/torchrl loss SACLoss.min_alpha: in the parity table but no longer an argument of the library class",
    ]


def test_a_class_without_a_table_and_a_stale_difference_are_named(cell):
    build = cell("torchrl", "ppo")
    tables = {name: table for name, table in torchrl_parity.TABLES.items() if name != "GAE"}
    # a default difference whose defaults became equal: the note must go
    tables["SamplerWithoutReplacement"] = {**tables["SamplerWithoutReplacement"],
                                           "shuffle": torchrl_parity.Setting("normalize_advantage", differs="stale")}  # fmt: skip
    assert torchrl_parity.parity_problems(build, tables) == [
        "ppo/torchrl value_estimator GAE: no parity table (add one: every argument mapped to a setting or excluded with a reason)",
        "ppo/torchrl sampler SamplerWithoutReplacement.shuffle: listed as a default difference, but both are True now; drop 'differs'",
    ]


def test_a_key_added_to_an_skrl_config_is_named(cell, monkeypatch):
    import rlplug_ppo.skrl_backend as ppo_skrl
    from skrl.agents.torch.ppo import PPO_CFG

    upgraded = dataclasses.make_dataclass("PPO_CFG", [("new_key", int, dataclasses.field(default=0))], bases=(PPO_CFG,), kw_only=True)
    monkeypatch.setattr(ppo_skrl.SkrlPPOTrainer, "config_class", upgraded)
    build = cell("skrl", "ppo")
    assert type(build.trainer.agent.cfg) is upgraded
    assert skrl_parity.parity_problems(build) == [
        "ppo/skrl agent config PPO_CFG.new_key: not in the parity table (on-policy); map it to a recipe setting or exclude it with a reason"
    ]


def test_parity_report_counts_every_argument(cell):
    """mapped + differs + excluded covers every argument: the counts docs/parity.md quotes."""
    build = cell("torchrl", "sac")
    report = torchrl_parity.parity_report(build)
    loss = report["SACLoss"]
    assert (loss["mapped"], loss["differs"], loss["excluded"]) == (4, 1, 17)
    assert loss["differences"] == {"loss_function": torchrl_parity.L2_LOSS}
    from torchrl.objectives import SACLoss

    assert sum(loss[k] for k in ("mapped", "differs", "excluded")) == len(torchrl_parity.library_arguments(SACLoss))
