"""name -> Recipe -> validated Build -> construction hooks -> Trainer."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contract.protocol import contract_problems
from .discovery import FIRST_PARTY, PluginHost
from ..contract.hookspecs import Build
from ..errors import BackendMissingError, PluginError, RecipeError, SpaceError, UnknownNameError
# the recipe layer is imported when a recipe is first read: `rlplug list` and `doctor` read none
if TYPE_CHECKING:
    from ..recipes.book import RecipeBook
    from ..recipes.fields import Recipe
from ..schema import AlgorithmSpec, check_type
from ..util.suggest import did_you_mean

STAGES = (
    ("models", "rlplug_build_models"),
    ("memory", "rlplug_build_memory"),
    ("loss", "rlplug_build_loss"),
    ("target_updater", "rlplug_build_target_updater"),
    ("trainer", "rlplug_build_trainer"),
)


class Session:
    """A plugin host plus the recipe book it sees: what one CLI invocation or Python user works with."""

    def __init__(
        self,
        plugins: Sequence[str] = (),
        recipe_files: Sequence[str] = (),
        objects: Sequence[Any] = (),
        entry_points: bool = True,
    ) -> None:
        self.plugins = tuple(plugins)  # ``--plugin`` values; builds carry them so run directories record them
        self.recipe_files = tuple(recipe_files)
        self.objects = tuple(objects)
        self.entry_points = entry_points
        self.host = PluginHost(self.plugins, self.objects, entry_points=entry_points)
        self._book: RecipeBook | None = None
        if self.recipe_files:  # a recipe file the user named is read (and refused if bad) whatever the command
            self.book

    @property
    def book(self) -> RecipeBook:
        """Every recipe this session sees, read on first use: `rlplug list` and `doctor` read no recipe file."""
        if self._book is None:
            from ..recipes.book import RecipeBook
            from ..recipes.files import first_party_registry

            book = RecipeBook()
            registry = first_party_registry()
            if registry is not None:
                book.add_file(registry)
            for source, tables in self.host.recipe_tables():
                book.add_tables(tables, source=f"plugin {source}")
            for path in self.recipe_files:
                book.add_file(path)
            self._book = book
        return self._book

    def with_plugins(self, plugins: Iterable[str]) -> Session:
        """A session like this one that also imports ``plugins`` (module values, after its own)."""
        added = tuple(dict.fromkeys((*self.plugins, *plugins)))
        return Session(plugins=added, recipe_files=self.recipe_files, objects=self.objects, entry_points=self.entry_points)

    # ---- recipes -------------------------------------------------------------------------------
    def resolve(self, ref: str, overrides: Iterable[str] = ()) -> Recipe:
        """Resolve a recipe by name and apply ``key=value`` overrides; checks it against its algorithm."""
        overrides = list(overrides)
        try:
            table, _ = self.book.raw(ref)
        except UnknownNameError:
            record = self.host.unloaded_recipe(ref.partition("@")[0])
            if record is None:
                raise
            raise PluginError(f"recipe '{ref}' comes from plugin {record.label}, which {record.error}") from None
        hp_names: list[str] = []
        algorithm = _override_of(overrides, "algorithm") or table.get("algorithm")
        if isinstance(algorithm, str) and algorithm in self.host.algorithms:
            hp_names = [p.name for p in self.host.algorithms[algorithm].params]
        recipe = self.book.resolve(ref, overrides, hp_names)
        spec = self.host.algorithm(recipe.algorithm)
        check_backend(spec, recipe.backend, f"recipe '{recipe.name}'")
        try:
            check_recipe(spec, recipe)
        except BrokenRuleError:
            # what the algorithm cannot take comes first: no budget or setting makes DQN take continuous actions,
            # so saying so before a budget rule spares the user fixing a recipe that still cannot run
            self._cell_takes(spec, recipe.backend, recipe, {**spec.defaults(), **recipe.hyperparameters}, {})
            raise
        for backend in recipe.backend_settings:
            check_backend(spec, backend, f"recipe '{recipe.name}': table [{backend}]")
        return recipe

    def _cell_takes(self, spec: AlgorithmSpec, backend: str, recipe: Recipe, hp: Mapping[str, Any],
                    extras: dict[str, Any], device: str = "cpu") -> tuple[Any, Any, Any]:  # fmt: skip
        """What the cell cannot take, refused: a multi-agent env or not, the action space, an action mask, the
        observation space (the encoders). Returns the spaces the models see and the encoder."""
        # imported here, not at the top: `rlplug list`, `recipes` and `show` never probe an environment
        from ..contract.encoders import resolve_encoder
        from ..envs.factory import env_errors, probe_spaces
        from ..envs.masks import check_action_mask, feature_space
        from ..envs.multiagent import check_env_kind, is_multiagent_env, probe_multiagent_spaces
        from ..envs.spec import EnvSpec
        from ..envs.torch_native import check_torch_env_algorithm, check_torch_env_fields, is_torch_env, probe_torch_spaces
        from ..envs.wrappers import check_wrapper_fields

        check_env_kind(spec.name, spec.kind, recipe.name, recipe.env)
        torch_env = is_torch_env(recipe.env)
        if torch_env:  # batched torch tensors on their own device (rlplug.envs.torch_native)
            check_torch_env_fields(recipe)
            check_torch_env_algorithm(spec.kind, spec.name, f"recipe '{recipe.name}'", recipe.env)
        check_wrapper_fields(recipe, is_multiagent_env(recipe.env))
        with env_errors(recipe.env, recipe.env_kwargs, f"recipe '{recipe.name}'"):
            if torch_env:
                observation_space, action_space = probe_torch_spaces(recipe.env, recipe.env_kwargs, recipe.seed, device)
            elif is_multiagent_env(recipe.env):  # per-agent spaces; agents and global state go to extras
                extras["multiagent"] = probe_multiagent_spaces(recipe.env, recipe.env_kwargs)
                observation_space, action_space = extras["multiagent"].observation_space, extras["multiagent"].action_space
            else:  # the wrapped env (rlplug.envs.factory): the spaces the models see
                observation_space, action_space = probe_spaces(EnvSpec.from_recipe(recipe, gamma=hp.get("gamma")))
        check_action_space(spec, backend, action_space, recipe, self.host.algorithms.values())
        check_action_mask(spec, backend, observation_space, action_space, recipe, self.host.algorithms.values())
        # the encoders decide which observation spaces are trainable: a registered encoder makes one so
        # (an action mask is no feature: they see the space without it)
        features = extras["multiagent"].feature_space if "multiagent" in extras else feature_space(observation_space)
        encoder = resolve_encoder(
            self.host.encoders, features, recipe.encoder, recipe.encoder_kwargs, recipe.env,
            f"recipe '{recipe.name}'", multiagent="multiagent" in extras,
        )
        return observation_space, action_space, encoder

    # ---- builds --------------------------------------------------------------------------------
    def prepare(self, recipe: Recipe | str, backend: str | None = None, overrides: Iterable[str] = (), device: str = "cpu") -> Build:
        """Validate everything and return a ``Build`` whose stages are still empty (nothing imported)."""
        if isinstance(recipe, str):
            recipe = self.resolve(recipe, overrides)
            spec = self.host.algorithm(recipe.algorithm)
        elif overrides:
            raise RecipeError("overrides apply when resolving by name; pass the recipe's name instead")
        else:  # a Recipe made elsewhere (a run directory's, a user's): the same checks as resolving by name
            from ..recipes.fields import check_fields

            check_fields(recipe)
            spec = self.host.algorithm(recipe.algorithm)
            check_recipe(spec, recipe)
        backend = backend or recipe.backend
        check_backend(spec, backend, f"recipe '{recipe.name}'")
        require_backend_libraries(spec, backend)
        hp = {**spec.defaults(), **recipe.hyperparameters}
        extras: dict[str, Any] = {}
        observation_space, action_space, encoder = self._cell_takes(spec, backend, recipe, hp, extras, device)
        dataset = check_dataset(spec, recipe, observation_space, action_space, self.book.datasets)
        if dataset is not None:
            extras["dataset"] = dataset  # a DatasetInfo; the cell's memory stage loads the transitions
        settings = backend_settings(spec, backend, hp, recipe)
        from ..hooks.recipe import check_hooks_for_loop

        check_hooks_for_loop(recipe.hooks, backend, spec.kind, bool(settings.get("compile")), f"recipe '{recipe.name}'")
        loss_name = recipe.loss or spec.loss_for(backend)
        loss_entry = self.host.losses.get(spec.name, backend, loss_name)
        return Build(
            recipe=recipe,
            algorithm=spec,
            backend=backend,
            hp=hp,
            settings=settings,
            env_id=recipe.env,
            env_kwargs=dict(recipe.env_kwargs),
            num_envs=recipe.num_envs,
            observation_space=observation_space,
            action_space=action_space,
            seed=recipe.seed,
            device=device,
            loss_entry=loss_entry,
            extras=extras,
            plugin_modules=self.plugins,
            encoder=encoder.name,
            encoders=self.host.encoders,
        )

    def construct(self, build: Build, check_stage: Callable[[str, str, Any], None] | None = None) -> Build:
        """Run the five construction hooks in order; each sees what the earlier ones stored; then register the
        training hooks plugins add (``rlplug_trainer_hooks``) and the recipe names (``hooks``).

        ``check_stage(slot, hook_name, value)`` sees each stage's result (the conformance kit's checks).
        """
        from ..util.rng import seed_all

        seed_all(build.seed)  # so every stage, a user's override too, starts from the recipe's seed
        for slot, hook_name in STAGES:
            value = getattr(self.host.pm.hook, hook_name)(build=build)
            setattr(build, slot, value)
            if check_stage is not None:
                check_stage(slot, hook_name, value)
            check_stage_result(slot, hook_name, value, build, self.host)
        from ..hooks.recipe import attach_hooks, check_monitors
        from .distributed import world

        attach_hooks(build, self.host)  # plugins' rlplug_trainer_hooks, then the recipe's hooks
        check_monitors(build)  # a monitor no metric of the run will ever match is refused before training
        if world().distributed:  # ranks built their networks from their own seeds: start all from rank 0's
            from ..backends.common.parallel import broadcast_build

            broadcast_build(build)
        return build

    def build(self, recipe: Recipe | str, backend: str | None = None, overrides: Iterable[str] = (), device: str = "cpu") -> Build:
        return self.construct(self.prepare(recipe, backend, overrides, device))


def _override_of(overrides: list[str], key: str) -> str | None:
    for item in reversed(overrides):
        k, _, v = item.partition("=")
        if k.strip() == key:
            return v.strip()
    return None


def check_backend(spec: AlgorithmSpec, backend: str, where: str) -> None:
    if backend not in spec.backends:
        known = list(spec.backends)
        close = did_you_mean(backend, known)
        hint = close if "did you mean" in close else ""
        raise UnknownNameError(
            f"{where}: algorithm '{spec.name}' has no backend '{backend}'{hint}; it runs on {', '.join(known)}"
        )


def check_recipe(spec: AlgorithmSpec, recipe: Recipe) -> None:
    """Every hyperparameter in its domain and every rule of the algorithm holding (``AlgorithmSpec.rules``),
    before anything is built; ``recipe.hyperparameters`` becomes the validated values. The ``search`` table
    (``rlplug tune``'s ranges) is checked against the same parameters."""
    from ..recipes.search_space import check_search

    recipe.hyperparameters = validate_hyperparameters(spec, recipe)
    check_search(spec, recipe)
    hp = {**spec.defaults(), **recipe.hyperparameters}
    try:
        problem = spec.broken_rule(hp, recipe)
    except Exception as err:  # noqa: BLE001 - a rule of a third-party declaration that cannot be evaluated
        raise PluginError(
            f"algorithm '{spec.name}' (plugin {spec.plugin or '?'}) declares a rule that fails on recipe "
            f"'{recipe.name}': {type(err).__name__}: {err}"
        ) from None
    if problem:
        raise BrokenRuleError(f"recipe '{recipe.name}': {problem}")


class BrokenRuleError(RecipeError):
    """A recipe breaks one of its algorithm's rules (``AlgorithmSpec.rules``): a budget or a setting to change."""


def check_stage_result(slot: str, hook_name: str, value: Any, build: Build, host: PluginHost) -> None:
    """What a construction hook returned is the plugin's responsibility: a string where models belong, or
    a trainer without ``train``, is refused here with the hook's name rather than failing later, deep in
    the run layer. ``None`` is fine except for the trainer (no plugin built one)."""
    cell = "/".join(build.cell)
    owners = [name for name in (impl.plugin_name.split(":")[0] for impl in getattr(host.pm.hook, hook_name).get_hookimpls())
              if name not in FIRST_PARTY]
    who = f" (third-party implementations: {', '.join(dict.fromkeys(owners))})" if owners else ""
    if value is None:
        if slot == "trainer":
            raise PluginError(f"no plugin built a trainer for {cell}")
        return
    if isinstance(value, (str, bytes, int, float, complex)):  # bool is an int
        raise PluginError(f"{hook_name} returned {type(value).__name__} {value!r:.60} for {cell}, not {_STAGE_WANTS[slot]}{who}")
    if slot == "models" and (not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value)):
        raise PluginError(f"{hook_name} returned {type(value).__name__} for {cell}, not {_STAGE_WANTS[slot]}{who}")
    if slot == "trainer":
        problems = contract_problems(value)
        if problems:
            raise PluginError(
                f"{hook_name} returned a {type(value).__name__} for {cell} that breaks the rlplug.Trainer contract: "
                f"{'; '.join(problems[:3])}{' ...' if len(problems) > 3 else ''}{who}"
            )


_STAGE_WANTS = {
    "models": "a table of named models (name -> model)",
    "memory": "a memory object",
    "loss": "a loss object",
    "target_updater": "a target updater object",
    "trainer": "an rlplug.Trainer",
}


def validate_hyperparameters(spec: AlgorithmSpec, recipe: Recipe) -> dict[str, Any]:
    params = spec.param_map
    out = {}
    for name, value in recipe.hyperparameters.items():
        if name not in params:
            raise UnknownNameError(
                f"recipe '{recipe.name}': unknown hyperparameter '{name}' for {spec.name}" + did_you_mean(name, params)
            )
        try:
            out[name] = params[name].validate(value, f"hyperparameter '{name}'")
        except (TypeError, ValueError) as err:
            raise RecipeError(f"recipe '{recipe.name}': {err}") from None
    return out


def check_action_space(
    spec: AlgorithmSpec, backend: str, action_space: Any, recipe: Recipe, installed: Iterable[AlgorithmSpec] = ()
) -> None:
    """Refuse an action space the cell cannot handle, naming the installed algorithms that can."""
    from ..envs.factory import action_space_kind

    kind = action_space_kind(action_space)
    supported = spec.backends[backend].action_spaces
    if kind == "continuous" and kind in supported and not action_space.is_bounded("both"):
        # every continuous cell squashes, scales or clamps its actions into the bounds (TorchRL's Bounded
        # spec refuses infinite ones outright), so a recipe trains on either backend only with finite ones
        raise SpaceError(
            f"recipe '{recipe.name}': environment '{recipe.env}' declares an unbounded action space ({action_space}); "
            f"{spec.name} needs finite low and high bounds for continuous actions: declare them in its action_space"
        )
    if kind in supported:
        return
    fits = sorted(
        other.name
        for other in installed
        if other.name != spec.name and (other.kind == "multi-agent") == (spec.kind == "multi-agent")
        and (other.kind == "offline") == (spec.kind == "offline") and other.demonstrations == spec.demonstrations
        and any(kind in b.action_spaces for b in other.backends.values())
    )
    names = ", ".join(fits[:-1]) + " or " + fits[-1] if len(fits) > 1 else "".join(fits)
    advice = f"for {kind} actions use {names}" if fits else f"no installed algorithm handles {kind} actions"
    raise SpaceError(
        f"recipe '{recipe.name}': {spec.name} on {backend} cannot handle the {kind} action space of "
        f"'{recipe.env}' ({action_space}); it supports {', '.join(supported)} actions; {advice}"
    )


def backend_settings(spec: AlgorithmSpec, backend: str, hp: dict[str, Any], recipe: Recipe) -> dict[str, Any]:
    """Translate neutral hyperparameters to the backend's settings, then apply the recipe's raw table."""
    translate = spec.backends[backend].settings
    try:
        settings = dict(translate(hp, recipe)) if translate is not None else {}
    except ValueError as err:  # a translator refusing a combination of values (utd_ratio <= 0, ...)
        raise RecipeError(f"recipe '{recipe.name}': {err}") from None
    for key, value in recipe.backend_settings.get(backend, {}).items():
        if key not in settings:
            raise UnknownNameError(
                f"recipe '{recipe.name}': unknown {backend} setting '{key}' for {spec.name}" + did_you_mean(key, settings)
            )
        current = settings[key]
        if current is not None and not isinstance(current, (dict, list)):
            try:
                value = check_type(value, type(current), f"{backend} setting '{key}'")
            except TypeError as err:
                raise RecipeError(f"recipe '{recipe.name}': {err}") from None
        settings[key] = value
    return settings


def check_dataset(
    spec: AlgorithmSpec, recipe: Recipe, observation_space: Any, action_space: Any, declared: Mapping[str, Any] = {}
) -> Any:
    """An offline recipe, or one of an algorithm that imitates demonstrations, names a readable dataset recorded on its
    env with its spaces; others name none."""
    where = f"recipe '{recipe.name}'"
    if not spec.reads_dataset:
        if recipe.dataset:
            raise RecipeError(f"{where}: 'dataset' is for offline algorithms and imitation from demonstrations; {spec.name} "
                              f"is {spec.kind} and collects its own data")  # fmt: skip
        return None
    if not recipe.dataset:
        what = "is an offline algorithm" if spec.kind == "offline" else "learns from demonstrations"
        raise RecipeError(f"{where}: {spec.name} {what} and needs a 'dataset' (see `rlplug dataset list`)")
    from ..data.datasets import DatasetError, dataset_path, read_info

    if recipe.dataset in declared and not dataset_path(recipe.dataset).exists():
        raise DatasetError(
            f"{where}: dataset '{recipe.dataset}' has not been built yet; `rlplug dataset build {recipe.dataset}` "
            f"makes it (`rlplug bench` builds it itself)"
        )
    info = read_info(recipe.dataset)
    info.check_env(recipe.env, observation_space, action_space, where)
    return info


def require_backend_libraries(spec: AlgorithmSpec, backend: str) -> None:
    backend_spec = spec.backends[backend]
    for library in backend_spec.requires:
        if importlib.util.find_spec(library) is None:
            extra = backend_spec.extra or backend
            raise BackendMissingError(
                f"the {backend} backend of {spec.name} needs '{library}', which is not installed: "
                f"pip install 'rlplug[{extra}]'"
            )

