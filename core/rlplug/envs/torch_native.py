"""Torch-native vector environments: ``env = "torch:MODULE:FACTORY"``.

A GPU simulator (IsaacLab, ManiSkill, MuJoCo Warp, Genesis) steps thousands of envs at once and hands the learner
batched torch tensors on its own device. Such an env trains here without a round trip through numpy:
``FACTORY(num_envs=N, device=D, seed=S, **env_kwargs)`` (imported from ``MODULE``) returns one of

* an **IsaacLab-style env** (the interface of IsaacLab's ``DirectRLEnv`` / ``ManagerBasedRLEnv`` that skrl's
  ``wrap_env(env, wrapper="isaaclab")`` accepts): ``num_envs``, ``device``, ``single_observation_space["policy"]``
  (a Box), ``single_action_space`` (Box or Discrete), ``reset(seed=None) -> ({"policy": obs}, extras)`` and
  ``step(actions) -> ({"policy": obs}, reward, terminated, truncated, extras)``, every value a ``[N, ...]`` tensor on
  ``device``, the env resetting ended episodes itself (the returned ``obs`` then holds the new episodes' first
  observations). Where ``extras["final_obs"]`` is a ``[N, ...]`` tensor it holds each env's observation before
  that reset (the returned one where no episode ended), which a truncated episode is bootstrapped from; without it (IsaacLab's own envs), from the new
  episode's first observation, as skrl does with IsaacLab. ``FACTORY.spaces(**env_kwargs) -> (observation_space,
  action_space)``, where the factory has it, gives the spaces without making an env;
* a **TorchRL ``EnvBase``** with a batch size ``[N]``, an ``"observation"`` entry, an ``"action"`` and the usual
  ``reward`` / ``done`` / ``terminated`` (/ ``truncated``) keys, reset per env through the ``"_reset"`` mask as
  TorchRL's collectors reset it.

skrl steps either through its own IsaacLab wrapper (an ``EnvBase`` first becomes IsaacLab-style:
``EnvBaseAsIsaacLab``), TorchRL through an ``EnvBase`` (an IsaacLab-style env is wrapped into one by
``rlplug.backends.torchrl.torch_env``). Evaluation runs the deterministic policy on a separate instance with one
env per episode (``evaluate_torch_env``). Parsing an id is torch-free; the rest imports torch when called.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import EnvModuleError, RecipeError, SpaceError, UnknownNameError

PREFIX = "torch"
FINAL_OBS_KEY = "final_obs"
"""The extras entry of an IsaacLab-style step holding each env's observation before its autoreset."""
GYMNASIUM_ONLY_FIELDS = ("vector_mode", "env_module", "action_mask")
"""Recipe fields that configure Gymnasium's envs and mean nothing to a torch-native one (besides the wrappers')."""


def is_torch_env(env_id: Any) -> bool:
    """``True`` for ``torch:MODULE:FACTORY`` ids (a Gymnasium id never starts with ``torch:``)."""
    return isinstance(env_id, str) and env_id.partition(":")[0] == PREFIX and ":" in env_id


def parse_torch_env(env_id: str) -> tuple[str, str]:
    """``"torch:my_sim.tasks:make_env"`` -> ``("my_sim.tasks", "make_env")``, or a one-line refusal."""
    _, _, rest = env_id.partition(":")
    module, colon, factory = rest.rpartition(":")
    if not colon or not module or not factory.isidentifier():
        raise UnknownNameError(f"'{env_id}' is not a torch-native env id; write torch:MODULE:FACTORY, e.g. torch:my_sim.tasks:make_env")
    return module, factory


def load_factory(env_id: str) -> Callable[..., Any]:
    """The ``FACTORY`` a ``torch:`` id names, imported from its module, or a one-line refusal."""
    module_name, factory = parse_torch_env(env_id)
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - whatever the module raises on import, the line names it
        message = " ".join(str(err).split()) or "(no message)"
        raise EnvModuleError(
            f"environment '{env_id}': module '{module_name}' cannot be imported ({type(err).__name__}: {message[:200]}); "
            "install it or put it on PYTHONPATH"
        ) from None
    made = getattr(module, factory, None)
    if made is None:
        from ..util.suggest import did_you_mean

        public = [name for name in vars(module) if not name.startswith("_") and callable(vars(module)[name])]
        raise UnknownNameError(f"environment '{env_id}': module '{module_name}' has no '{factory}'" + did_you_mean(factory, public))
    if not callable(made):
        raise SpaceError(f"environment '{env_id}': '{module_name}.{factory}' is a {type(made).__name__}, not a callable returning an env")
    return made


def check_torch_env_fields(recipe: Any) -> None:
    """Refuse the Gymnasium-only fields a torch-native env cannot honour, in one line (before anything is built):
    the wrapper fields (``rlplug.envs.wrappers.WRAPPER_FIELDS``; ``clip_actions`` is honoured, by a clamp in front
    of the env), ``vector_mode``, ``env_module`` and ``action_mask``."""
    from .wrappers import WRAPPER_FIELDS

    where = f"recipe '{recipe.name}'"
    given = [name for name in WRAPPER_FIELDS if getattr(recipe, name, 0)]
    if given:
        raise RecipeError(f"{where}: {given[0]} wraps Gymnasium environments, not the torch-native '{recipe.env}': drop it")
    if getattr(recipe, "vector_mode", "sync") != "sync":
        raise RecipeError(f"{where}: vector_mode '{recipe.vector_mode}' steps Gymnasium envs; '{recipe.env}' steps its own batch: drop it")
    if getattr(recipe, "env_module", ""):
        raise RecipeError(f"{where}: env_module registers Gymnasium ids; '{recipe.env}' names its module itself: drop env_module")
    if getattr(recipe, "action_mask", "auto") != "auto":
        raise RecipeError(f"{where}: action_mask reads Gymnasium observations; '{recipe.env}' has none to read: drop it")


TRAINED_KINDS = ("on-policy", "off-policy")
"""The families whose bases step a torch-native env (their single-agent trainers)."""


def check_torch_env_algorithm(kind: str, algorithm: str, where: str, env_id: str) -> None:
    """Torch-native envs train on-policy and off-policy cells (whose bases step them); refuse the others in one line."""
    if kind not in TRAINED_KINDS:
        raise RecipeError(f"{where}: '{env_id}' is a torch-native env, which trains on-policy and off-policy algorithms "
                          f"(ppo, sac, ...); {algorithm} is {kind}")  # fmt: skip


# ---- making and probing ---------------------------------------------------------------------------------


def make_torch_env(env_id: str, env_kwargs: Mapping[str, Any] | None, num_envs: int, device: Any, seed: int) -> Any:
    """``FACTORY(num_envs=..., device=..., seed=..., **env_kwargs)``, checked to be one of the two interfaces."""
    factory = load_factory(env_id)
    kwargs = dict(env_kwargs or {})
    clash = sorted(set(kwargs) & {"num_envs", "device", "seed"})
    if clash:
        raise RecipeError(f"environment '{env_id}': env_kwargs.{clash[0]} is set by rlplug (num_envs, device and seed come from the recipe and --device)")
    try:
        env = factory(num_envs=num_envs, device=str(device), seed=seed, **kwargs)
    except TypeError as err:
        raise SpaceError(f"environment '{env_id}' rejected its arguments (num_envs, device, seed, env_kwargs {kwargs}): {err}") from None
    interface_of(env, env_id)
    return env


def interface_of(env: Any, env_id: str = "") -> str:
    """``"torchrl"`` for a batched TorchRL ``EnvBase``, ``"isaaclab"`` for an IsaacLab-style env; else one line."""
    if any(cls.__name__ == "EnvBase" and cls.__module__.startswith("torchrl.") for cls in type(env).__mro__):
        if len(env.batch_size) != 1:
            raise SpaceError(f"environment '{env_id}': a TorchRL EnvBase needs a batch size [num_envs]; this one has {list(env.batch_size)}")
        if "observation" not in env.observation_spec.keys():
            keys = ", ".join(map(str, env.observation_spec.keys())) or "none"
            raise SpaceError(f"environment '{env_id}': a TorchRL EnvBase needs an 'observation' entry (it has {keys}); "
                             "gather them with CatTensors(out_key='observation')")  # fmt: skip
        return "torchrl"
    missing = [name for name in ("num_envs", "device", "step", "reset") if not hasattr(env, name)]
    policy_space = _policy_space(env)
    if missing or policy_space is None or not hasattr(env, "single_action_space"):
        what = ", ".join(missing) or ("single_observation_space['policy']" if policy_space is None else "single_action_space")
        raise SpaceError(
            f"environment '{env_id}': the factory returned a {type(env).__name__}, which is neither an IsaacLab-style env "
            f"(it lacks {what}) nor a TorchRL EnvBase with a batch size"
        )
    return "isaaclab"


def _policy_space(env: Any) -> Any:
    spaces = getattr(env, "single_observation_space", None)
    try:
        return spaces["policy"]
    except (KeyError, TypeError):
        return None


def spaces_of(env: Any, env_id: str = "") -> tuple[Any, Any]:
    """``(observation_space, action_space)`` of one env of the batch, as Gymnasium spaces (what the models see)."""
    import gymnasium as gym

    if interface_of(env, env_id) == "torchrl":
        observation = _space_of_spec(env.observation_spec["observation"], env.batch_size, env_id, "observation")
        action = _space_of_spec(env.action_spec, env.batch_size, env_id, "action")
    else:
        observation, action = _policy_space(env), env.single_action_space
    if not isinstance(observation, gym.spaces.Box):
        raise SpaceError(f"environment '{env_id}': torch-native envs need a Box observation, not {observation}")
    if not isinstance(action, (gym.spaces.Box, gym.spaces.Discrete)):
        raise SpaceError(f"environment '{env_id}': torch-native envs need a Box or Discrete action space, not {action}")
    return observation, action


def _space_of_spec(spec: Any, batch_size: Any, env_id: str, what: str) -> Any:
    """A TorchRL leaf spec of a ``[N]`` env as the Gymnasium space of one env."""
    import gymnasium as gym
    import numpy as np

    shape = tuple(spec.shape[len(batch_size):])
    kind = type(spec).__name__
    if kind == "Categorical" and getattr(spec.space, "n", None) is not None:
        return gym.spaces.Discrete(int(spec.space.n))
    if kind in ("Bounded", "BoundedContinuous"):
        low = spec.space.low.reshape(-1, *shape)[0].cpu() if spec.space.low.dim() > len(shape) else spec.space.low.cpu()
        high = spec.space.high.reshape(-1, *shape)[0].cpu() if spec.space.high.dim() > len(shape) else spec.space.high.cpu()
        return gym.spaces.Box(low.expand(shape).numpy().astype(np.float32), high.expand(shape).numpy().astype(np.float32))
    if kind in ("Unbounded", "UnboundedContinuous"):
        return gym.spaces.Box(-np.inf, np.inf, shape, np.float32)
    raise SpaceError(f"environment '{env_id}': its {what} spec is a {kind}; torch-native envs take Bounded / Unbounded "
                     "observations and actions or Categorical actions")  # fmt: skip


def probe_torch_spaces(env_id: str, env_kwargs: Mapping[str, Any] | None, seed: int, device: Any = "cpu") -> tuple[Any, Any]:
    """One env's ``(observation_space, action_space)``: ``FACTORY.spaces(**env_kwargs)`` where the factory offers it
    (a simulator that cannot build a second instance in one process reads them from its config), else from the env
    made once with one sub-env (closed after)."""
    import gymnasium as gym

    spaces = getattr(load_factory(env_id), "spaces", None)
    if callable(spaces):
        observation, action = spaces(**dict(env_kwargs or {}))
        if not isinstance(observation, gym.spaces.Box) or not isinstance(action, (gym.spaces.Box, gym.spaces.Discrete)):
            raise SpaceError(f"environment '{env_id}': its factory's spaces() gave ({observation}, {action}); "
                             "torch-native envs need a Box observation and a Box or Discrete action")  # fmt: skip
        return observation, action
    env = make_torch_env(env_id, env_kwargs, 1, device, seed)
    try:
        return spaces_of(env, env_id)
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()


def isaaclab_style(env: Any, env_id: str = "", clip_actions: bool = False) -> Any:
    """The env with the IsaacLab-style interface: itself, or a TorchRL ``EnvBase`` seen through ``EnvBaseAsIsaacLab``;
    with ``clip_actions``, Box actions clamped into the space's bounds on their way in (``ClampedActions``)."""
    styled = EnvBaseAsIsaacLab(env, env_id) if interface_of(env, env_id) == "torchrl" else env
    if clip_actions and _is_box(styled.single_action_space):
        return ClampedActions(styled)
    return styled


def _is_box(space: Any) -> bool:
    import gymnasium as gym

    return isinstance(space, gym.spaces.Box)


class ClampedActions:
    """An IsaacLab-style env whose Box actions are clamped into the action space's bounds before each step (the
    recipe's ``clip_actions``, as the Gymnasium path clips inside each sub-env): the agent keeps the sample it drew,
    so its log-probabilities stay those of its distribution. Everything else is the env's."""

    def __init__(self, env: Any) -> None:
        import torch

        self.env = env
        space = env.single_action_space
        self.low = torch.as_tensor(space.low, dtype=torch.float32, device=env.device)
        self.high = torch.as_tensor(space.high, dtype=torch.float32, device=env.device)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> ClampedActions:
        return self

    def step(self, actions: Any) -> Any:
        import torch

        return self.env.step(torch.clamp(actions, self.low, self.high))

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        return self.env.reset(*args, **kwargs)

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if callable(close):
            close()


class EnvBaseAsIsaacLab:
    """A batched TorchRL ``EnvBase`` with the IsaacLab-style interface skrl's ``wrap_env(..., "isaaclab")`` steps.

    ``step`` is TorchRL's ``step_and_maybe_reset``: the envs whose episode ended are reset through the ``"_reset"``
    mask (as TorchRL's collectors reset them), their new first observations returned, their last ones in
    ``extras["final_obs"]``. Everything stays on the env's device."""

    def __init__(self, env: Any, env_id: str = "") -> None:
        import gymnasium as gym

        self.env = env
        self.num_envs = int(env.batch_size[0])
        self.device = env.device
        observation, action = spaces_of(env, env_id)
        self.single_observation_space = gym.spaces.Dict({"policy": observation})
        self.single_action_space = action
        self._action_shape = tuple(env.action_spec.shape)
        self._carrier: Any = None

    @property
    def unwrapped(self) -> EnvBaseAsIsaacLab:
        return self

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self.env.set_seed(int(seed))
        self._carrier = self.env.reset()
        return {"policy": self._carrier["observation"]}, {}

    def step(self, actions: Any) -> tuple[dict[str, Any], Any, Any, Any, dict[str, Any]]:
        if self._carrier is None:
            self.reset()
        self._carrier.set("action", actions.reshape(self._action_shape))
        stepped, self._carrier = self.env.step_and_maybe_reset(self._carrier)
        after = stepped.get("next")
        terminated = after.get("terminated", None)
        if terminated is None:
            terminated = after.get("done")
        truncated = after.get("truncated", None)
        if truncated is None:
            truncated = terminated.new_zeros(terminated.shape)  # an env without time limits (upstream's PendulumEnv)
        observations = self._carrier["observation"]
        return ({"policy": observations}, after["reward"].reshape(-1), terminated.reshape(-1), truncated.reshape(-1),
                {FINAL_OBS_KEY: after["observation"]})  # fmt: skip

    def close(self) -> None:
        if not getattr(self.env, "is_closed", False):
            self.env.close()


# ---- evaluation -----------------------------------------------------------------------------------------


def evaluate_torch_env(env_id: str, env_kwargs: Mapping[str, Any] | None, policy: Callable[[Any], Any], episodes: int, seed: int,
                       device: Any, max_steps: int = 100_000) -> list[float]:  # fmt: skip
    """The returns of ``episodes`` deterministic episodes: a separate instance with one env per episode (seeded
    ``seed + EVAL_SEED_OFFSET``, never a training reset), each env's first episode, ``policy(observations) ->
    actions`` on tensors (the trainer's exported deterministic policy). The loop stays on the env's device; it
    looks at the ended episodes every 64 steps, not at every step."""
    import torch

    from .evaluation import EVAL_SEED_OFFSET, episodes_done

    eval_seed = seed + EVAL_SEED_OFFSET
    env = isaaclab_style(make_torch_env(env_id, env_kwargs, episodes, device, eval_seed), env_id)
    try:
        observations, _ = env.reset(seed=eval_seed)
        observations = observations["policy"]
        dev = observations.device
        totals = torch.zeros(episodes, dtype=torch.float64, device=dev)
        running = torch.ones(episodes, dtype=torch.bool, device=dev)
        with torch.no_grad():
            for step in range(max_steps):
                actions = policy(observations)
                after, reward, terminated, truncated, _ = env.step(actions)
                observations = after["policy"]
                totals += reward.reshape(-1).to(torch.float64) * running
                running &= ~(terminated.reshape(-1) | truncated.reshape(-1))
                if step % 64 == 63 and not bool(running.any()):
                    break
    finally:
        env.close()
    episodes_done(episodes)
    return totals.cpu().tolist()
