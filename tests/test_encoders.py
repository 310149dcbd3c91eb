"""Observation encoders: the registry and the default choice, the one-line refusal of a space no encoder
accepts, a user's encoder making a new space trainable through the hook, CNN cells training on a tiny
generated image env on every algorithm that learns from images (both backends), Dict observations on
ppo and sac, uint8 images stored as uint8 in replay and rollout memories, and offline cells on an image
dataset. Everything is kept tiny (12x12 frames, one 4-channel conv, a few hundred steps)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

import rlplug
from rlplug.errors import SpaceError, UnknownNameError
from rlplug.contract.encoders import EncoderRegistrationError, EncoderRegistry

import image_envs  # noqa: F401 - registers the tiny environments

pytest.importorskip("skrl")
pytest.importorskip("torchrl")

SMALL_CNN = "encoder_kwargs = { channels = [4], kernels = [3], strides = [2], features = 16 }"
# a few hundred env steps, few gradient steps: TorchRL's losses cost ~30 ms a step on a shared 2-core box
OFF_POLICY = "learning_starts = 64\nbatch_size = 16\nbuffer_size = 1000\nhidden_sizes = [16]\nlog_every = 96\ntrain_every = 4\nutd_ratio = 0.25"

RECIPES = f"""
[recipes.img-ppo]
extends = "ppo-cartpole"
env = "RlplugTinyImage-v0"
steps = 256
num_envs = 2
{SMALL_CNN}
[recipes.img-ppo.hyperparameters]
rollout_steps = 32
epochs = 1
minibatches = 2
hidden_sizes = [16]

[recipes.img-dqn]
extends = "dqn-cartpole"
env = "RlplugTinyImage-v0"
steps = 192
{SMALL_CNN}
[recipes.img-dqn.hyperparameters]
{OFF_POLICY}

[recipes.img-sac]
extends = "sac-pendulum"
env = "RlplugTinyImageBox-v0"
steps = 192
{SMALL_CNN}
[recipes.img-sac.hyperparameters]
{OFF_POLICY}

[recipes.img-td3]
extends = "td3-pendulum"
env = "RlplugTinyImageBox-v0"
steps = 192
{SMALL_CNN}
[recipes.img-td3.hyperparameters]
{OFF_POLICY}

[recipes.dict-ppo]
extends = "img-ppo"
env = "RlplugTinyDict-v0"
encoder_kwargs = {{ channels = [4], kernels = [3], strides = [1], features = 8 }}

[recipes.dict-sac]
extends = "img-sac"
env = "RlplugTinyDictBox-v0"
encoder_kwargs = {{ channels = [4], kernels = [3], strides = [1], features = 8 }}

[recipes.volume-ppo]
extends = "img-ppo"
env = "RlplugTinyVolume-v0"
encoder_kwargs = {{}}
"""

OFFLINE = """
[recipes.img-iql]
extends = "iql-pendulum-medium"
env = "RlplugTinyImageBox-v0"
dataset = "{dataset}"
steps = 8
target_metric = "return"
beat_dataset = false
{cnn}
[recipes.img-iql.hyperparameters]
hidden_sizes = [16]
batch_size = 16
log_every = 4
eval_every = 0

[recipes.img-cql]
extends = "cql-pendulum-medium"
env = "RlplugTinyImageBox-v0"
dataset = "{dataset}"
steps = 8
target_metric = "return"
beat_dataset = false
{cnn}
[recipes.img-cql.hyperparameters]
hidden_sizes = [16]
batch_size = 16
num_random = 2
log_every = 4
eval_every = 0
"""


@pytest.fixture(scope="module")
def recipe_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoders")
    dataset = root / "tiny-image-data"
    _write_image_dataset(dataset)
    path = root / "recipes.toml"
    path.write_text(RECIPES + OFFLINE.format(dataset=dataset, cnn=SMALL_CNN))
    return path


@pytest.fixture(scope="module")
def session(recipe_file):
    return rlplug.pipeline.session.Session(recipe_files=[str(recipe_file)])


def _write_image_dataset(path, transitions=96):
    """Random-policy transitions of the tiny continuous image env, in rlplug's dataset format."""
    from rlplug.data.datasets import write

    env = gym.make("RlplugTinyImageBox-v0")
    columns = {k: [] for k in ("observation", "action", "reward", "next_observation", "terminated", "truncated")}
    observation, _ = env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(transitions):
        action = env.action_space.sample()
        next_observation, reward, terminated, truncated, _ = env.step(action)
        for key, value in zip(columns, (observation, action, reward, next_observation, terminated, truncated)):
            columns[key].append(value)
        observation = env.reset()[0] if terminated or truncated else next_observation
    write(
        str(path), {k: np.asarray(v) for k, v in columns.items()}, env_id="RlplugTinyImageBox-v0", env_kwargs={},
        observation_space=env.observation_space, action_space=env.action_space, source={"kind": "test"}, reference={},
    )
    env.close()


def _train(session, name, backend, steps=None):
    build = session.build(name, backend)
    try:
        trainer = build.trainer
        metrics = []
        trainer.train(steps or build.recipe.steps, callbacks=[lambda _, m: metrics.append(m)])
        losses = {k: v for m in metrics for k, v in m.items() if k.startswith("loss/")}
        assert losses, f"{name}/{backend} reported no loss terms"
        assert all(math.isfinite(v) for v in losses.values()), losses
        assert len(trainer.evaluate(1)) == 1
        return build
    finally:
        build.trainer.close()


# ---- the registry (torch-free) --------------------------------------------------------------------


def test_builtin_encoders_and_the_default_choice():
    encoders = rlplug.session().host.encoders
    assert encoders.names() == ["minatar_cnn", "nature_cnn", "multi_input", "mlp"]
    box = gym.spaces.Box
    assert encoders.default_for(box(-1, 1, (4,))).name == "mlp"
    assert encoders.default_for(box(0, 255, (84, 84, 4), np.uint8)).name == "nature_cnn"
    assert encoders.default_for(box(0, 255, (4, 84, 84), np.uint8)).name == "nature_cnn"
    assert encoders.default_for(box(0, 255, (84, 84), np.uint8)).name == "nature_cnn"
    assert encoders.default_for(box(0, 1, (10, 10, 4), bool)).name == "minatar_cnn"
    mixed = gym.spaces.Dict({"image": box(0, 255, (8, 8, 1), np.uint8), "vector": box(-1, 1, (3,))})
    assert encoders.default_for(mixed).name == "multi_input"
    assert encoders.default_for(box(0, 1, (2, 3, 4, 5))) is None
    assert encoders.default_for(gym.spaces.Discrete(3)) is None


def test_a_name_registered_twice_is_refused():
    registry = EncoderRegistry()
    registry.register("mine", lambda space, options, encoders: None, accepts=lambda space, encoders: True)
    with pytest.raises(EncoderRegistrationError, match="already registered"):
        registry.register("mine", lambda space, options, encoders: None, accepts=lambda space, encoders: True)
    registry.register("mine", lambda space, options, encoders: None, accepts=lambda space, encoders: False, override=True)


def test_the_registry_is_torch_free():
    code = "import sys, rlplug.contract.encoders, rlplug; rlplug.session().host.encoders.names(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_channel_layout_is_detected_from_the_space():
    from rlplug.backends.common.encoders import make_nature_cnn

    small = {"channels": [4], "kernels": [3], "strides": [1], "features": 0}
    assert make_nature_cnn(gym.spaces.Box(0, 255, (12, 12, 3), np.uint8), small).layout == "last"
    assert make_nature_cnn(gym.spaces.Box(0, 255, (4, 12, 12), np.uint8), small).layout == "first"
    assert make_nature_cnn(gym.spaces.Box(0, 255, (12, 12), np.uint8), small).layout == "grey"
    with pytest.raises(SpaceError, match="too small for kernels"):
        make_nature_cnn(gym.spaces.Box(0, 255, (12, 12, 1), np.uint8), {})


# ---- the observation check asks the encoders ------------------------------------------------------


REFUSAL = (
    "recipe 'volume-ppo': no encoder accepts the observation space Box(0.0, 1.0, (2, 3, 4, 5), float32) of "
    "'RlplugTinyVolume-v0' (registered encoders: minatar_cnn, nature_cnn, multi_input, mlp); a plugin registers "
    "one with the rlplug_register_encoders hook (encoders.register(name, factory, accepts=...); `rlplug guide`, section 6)"
)


def test_a_space_no_encoder_accepts_is_refused_in_one_line(session):
    with pytest.raises(SpaceError) as err:
        session.prepare("volume-ppo")
    assert str(err.value) == REFUSAL


def test_a_named_encoder_must_accept_the_space(session):
    with pytest.raises(SpaceError, match="encoder 'nature_cnn' does not accept .*'CartPole-v1'; encoders that do: mlp"):
        session.prepare("ppo-cartpole", overrides=["encoder=nature_cnn"])
    with pytest.raises(UnknownNameError, match="unknown encoder 'natur_cnn' \\(did you mean 'nature_cnn'\\?\\)"):
        session.prepare("ppo-cartpole", overrides=["encoder=natur_cnn"])
    with pytest.raises(rlplug.errors.RecipeError, match="encoder 'nature_cnn' has no option 'chanels' \\(did you mean 'channels'\\?\\)"):
        session.prepare("img-ppo", overrides=["encoder_kwargs.chanels=[4]"])
    with pytest.raises(SpaceError, match="recipe 'img-ppo': encoder 'nature_cnn': a 12x12 image is too small for kernels"):
        session.prepare("img-ppo", overrides=["encoder_kwargs={}"])


class VolumeEncoders:
    """A user's plugin: an encoder for 4-D volumes, registered through the same hook as the built-ins."""

    @rlplug.hookimpl
    def rlplug_register_encoders(self, encoders):
        encoders.register(
            "volume", make_volume_encoder, accepts=lambda space, _: isinstance(space, gym.spaces.Box) and len(space.shape) == 4,
            doc="flattens a 4-D volume into a 32-unit layer",
        )


def make_volume_encoder(space, options, encoders):
    import torch
    from torch import nn

    class Volume(nn.Module):
        features = 32

        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(int(np.prod(space.shape)), self.features)

        def forward(self, x):
            lead = x.shape[: x.ndim - 4]
            return torch.relu(self.linear(x.reshape(*lead, -1).float()))

    return Volume()


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_registered_encoder_makes_a_new_space_trainable(recipe_file, backend):
    session = rlplug.pipeline.session.Session(recipe_files=[str(recipe_file)], objects=[VolumeEncoders()])
    build = _train(session, "volume-ppo", backend, steps=128)
    assert build.encoder == "volume"


# ---- CNN cells on images, Dict cells -------------------------------------------------------------


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("name", ["img-ppo", "img-dqn", "img-sac", "img-td3"])
def test_a_cnn_cell_trains_on_images(session, name, backend):
    build = _train(session, name, backend)
    assert build.encoder == "nature_cnn"
    memory = build.trainer.agent.memory if backend == "skrl" else build.trainer.memory
    _assert_uint8_observations(memory, backend)


def _assert_uint8_observations(memory, backend):
    import torch

    if backend == "skrl":
        names = [n for n in ("observations", "next_observations") if n in memory.tensors]
        assert names and all(memory.tensors[n].dtype == torch.uint8 for n in names)
        frame = memory.tensors["observations"][0, 0]
        assert frame.numel() == 144 and frame.element_size() == 1
    else:
        stored = memory.storage[0] if hasattr(memory, "storage") else memory[0]
        assert stored["observation"].dtype == torch.uint8
        assert stored["observation"].shape == (12, 12, 1)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("name", ["dict-ppo", "dict-sac"])
def test_dict_observations_train(session, name, backend):
    build = _train(session, name, backend)
    assert build.encoder == "multi_input"
    observations = {"image": np.zeros((3, 8, 8, 1), np.uint8), "vector": np.zeros((3, 3), np.float32)}
    build.trainer.act_deterministic(observations)


# ---- offline cells on an image dataset -----------------------------------------------------------


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("name", ["img-iql", "img-cql"])
def test_offline_cells_learn_from_an_image_dataset(session, name, backend):
    import torch

    build = _train(session, name, backend)
    assert build.encoder == "nature_cnn"
    if backend == "skrl":
        assert build.trainer.agent.memory.tensors["observations"].dtype == torch.uint8


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_an_image_cell_conforms(recipe_file, backend):
    """Checkpoint round trip (uint8 replay included) and N + resume + N == 2N on a CNN cell."""
    from rlplug.testing import check_cell

    check_cell("img-dqn", backend=backend, recipe_files=[str(recipe_file)], steps=96)
