"""Plugin discovery: entry points of group ``rlplug.plugins``, loaded onto one pluggy manager.

Listing entry points reads metadata only (kept between commands: ``entry_point_cache``). Loading imports each plugin's entry module (cheap by
contract: no torch), never its backend modules. A plugin that fails to import, whose declaration
hooks fail or return the wrong shape (dicts where ``AlgorithmSpec``s belong, a recipe that is not a
table with a name), declares an algorithm another plugin already claims, or targets another core API
version is recorded with the reason; every other plugin keeps working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ..contract.encoders import BUILTIN as BUILTIN_ENCODERS
from ..contract.encoders import EncoderRegistry
from ..errors import PluginError, RlplugError, UnknownNameError
from ..contract.hookspecs import API_VERSION, RlplugSpec
from ..contract.losses import LossRegistry
from ..contract.plugin import AlgorithmPlugin
from ..schema import AlgorithmSpec, declaration_problems
from ..util.here import import_from_here
from ..util.suggest import did_you_mean
from .entry_point_cache import entry_points_of

GROUP = "rlplug.plugins"
FIRST_PARTY = frozenset(
    f"rlplug-{a}" for a in ("ppo", "sac", "dqn", "td3", "ddpg", "iql", "cql", "mappo", "ippo", "td3bc", "a2c", "rpo", "reinforce", "bc", "qrdqn", "c51", "tqc", "redq", "crossq", "trpo", "qmix", "gail", "dt")
)
CORE_VERSION = "0.1.0"


@dataclass
class PluginRecord:
    """One plugin: where it came from and what became of it."""

    name: str
    value: str
    dist: str
    version: str
    first_party: bool
    status: str = "ok"  # ok | broken | incompatible
    error: str = ""
    obj: Any = None
    algorithms: list[AlgorithmSpec] = field(default_factory=list)
    recipes: list[dict[str, Any]] = field(default_factory=list)  # what its rlplug_recipes() returned, checked
    declared: list[str] = field(default_factory=list)
    """Algorithms an incompatible plugin declares: asking for one names the plugin and why it is not loaded."""

    @property
    def label(self) -> str:
        return f"{self.dist} {self.version}".strip()


def _entry_point_records() -> list[PluginRecord]:
    records = [PluginRecord(name, value, dist, version, dist in FIRST_PARTY) for name, value, dist, version in entry_points_of(GROUP)]
    # first-party plugins are registered first so third-party tryfirst implementations win
    records.sort(key=lambda r: (not r.first_party, r.dist, r.name))
    return records


def _load_object(value: str) -> Any:
    module_name, _, attribute = value.partition(":")
    obj = import_from_here(module_name)  # --plugin mymodule beside you, as python -m finds it
    for part in filter(None, attribute.split(".")):
        obj = getattr(obj, part)
    return obj


class _Manager(pluggy.PluginManager):
    """pluggy's manager that does not look for hook implementations among dunder names (``__init__``,
    ``__repr__``, ...): two thirds of the 520 names the installed plugin objects have, each looked up statically,
    about 3 ms of every `rlplug list`. A hook implementation is a decorated function named ``rlplug_*`` (or given
    any other name with ``specname=``), never a dunder; ``parse_hookimpl_opts`` is pluggy's hook for this."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            return None
        if type(plugin) is AlgorithmPlugin and not name.startswith("rlplug_"):
            return None  # the first-party plugin class: its hooks are its rlplug_* methods (pluggy's static lookup of
            # its other ~15 names, for every installed plugin, was ~2 ms of every command)
        return super().parse_hookimpl_opts(plugin, name)


class PluginHost:
    """The plugin manager, the algorithms plugins declared, and the loss registry."""

    def __init__(self, extra_modules: tuple[str, ...] = (), objects: tuple[Any, ...] = (), entry_points: bool = True):
        self.pm = _Manager("rlplug")
        self.pm.add_hookspecs(RlplugSpec)
        self.records: list[PluginRecord] = _entry_point_records() if entry_points else []
        self.algorithms: dict[str, AlgorithmSpec] = {}
        self.owners: dict[str, PluginRecord] = {}
        self.conflicts: dict[str, list[PluginRecord]] = {}
        self.losses = LossRegistry()
        self.encoders = EncoderRegistry()
        # the core's encoders come through the same hook as everyone's, registered before any plugin
        self.pm.register(BUILTIN_ENCODERS, name="rlplug:encoders")
        for record in self.records:
            self._load_record(record)
        for value in extra_modules:  # ``module`` or ``module:attribute``, like an entry point's value
            record = PluginRecord(value, value, value, "", False)
            self.records.append(record)
            try:
                record.obj = _load_object(value)
            except Exception as err:  # noqa: BLE001 - any import failure is reported, not raised
                raise PluginError(f"--plugin {value}: cannot import it: {type(err).__name__}: {err}") from None
            self._register(record)
        for obj in objects:
            self.register(obj)
        self.pm.hook.rlplug_register_losses.call_historic(kwargs={"losses": self.losses})
        self.pm.hook.rlplug_register_encoders.call_historic(kwargs={"encoders": self.encoders})

    def _load_record(self, record: PluginRecord) -> None:
        try:
            record.obj = _load_object(record.value)
        except Exception as err:  # noqa: BLE001 - a broken plugin must not break the others
            record.status, record.error = "broken", f"{type(err).__name__}: {err}"
            return
        self._register(record)

    def register(self, obj: Any, name: str | None = None) -> PluginRecord:
        """Register a user plugin object (module, class instance) after every entry-point plugin."""
        label = name or getattr(obj, "__name__", None) or type(obj).__name__
        record = PluginRecord(label, label, label, "", False, obj=obj)
        self.records.append(record)
        self._register(record)
        return record

    def _register(self, record: PluginRecord) -> None:
        if record.version:  # an entry point of an installed distribution: losses its package registers are its
            self.losses.sources.setdefault(record.value.partition(":")[0].partition(".")[0], record.dist)
        try:
            self.pm.register(record.obj, name=f"{record.dist}:{record.name}:{id(record.obj)}")
        except ValueError as err:  # already registered (the same module under two names)
            record.status, record.error = "broken", str(err)
            return
        except pluggy.PluginValidationError as err:
            record.status, record.error = "broken", f"invalid hook implementation: {err}"
            return
        declare = getattr(record.obj, "rlplug_algorithms", None)
        try:
            specs = _returned_list(declare() if declare is not None else [], "rlplug_algorithms()", "rlplug.AlgorithmSpecs")
            # the API version first: a plugin for another API may declare what this core's checks do not know
            wrong = [s for s in specs if isinstance(s, AlgorithmSpec) and s.api_version != API_VERSION]
            if wrong:
                self._incompatible(record, specs, wrong[0].api_version)
                return
            problems = [problem for spec in specs for problem in declaration_problems(spec)]
            if problems:
                raise _Malformed(f"rlplug_algorithms() is malformed: {problems[0]}")
            record.recipes = self._declared_recipes(record)
        except _Malformed as err:
            self._break(record, str(err))
            return
        except Exception as err:  # noqa: BLE001 - a plugin's declaration hook failing must not break the others
            self._break(record, f"rlplug_algorithms() failed: {type(err).__name__}: {err}")
            return
        for spec in specs:
            object.__setattr__(spec, "plugin", record.dist)
            object.__setattr__(spec, "plugin_version", record.version)
            record.algorithms.append(spec)
            owner = self.owners.get(spec.name)
            if owner is not None and owner is not record:
                self.conflicts.setdefault(spec.name, [owner]).append(record)
                continue
            self.owners[spec.name] = record
            self.algorithms[spec.name] = spec

    def _incompatible(self, record: PluginRecord, specs: list[Any], api_version: Any) -> None:
        """Unload a plugin for another core API version, keeping the names of its algorithms and recipes so that
        asking for one says why it is not there (not that no plugin provides it)."""
        record.status = "incompatible"
        record.declared = [s.name for s in specs if isinstance(s, AlgorithmSpec)]
        record.error = (
            f"implements rlplug API {api_version}, but this rlplug {CORE_VERSION} implements API "
            f"{API_VERSION}; install a release of {record.dist} built for API {API_VERSION} "
            f"(rlplug {CORE_VERSION} meets plugins declaring api_version = {API_VERSION})"
        )
        for impl in self.pm.hook.rlplug_recipes.get_hookimpls():
            if impl.plugin is record.obj:
                try:
                    returned = impl.function()
                except Exception:  # noqa: BLE001 - only the names are wanted, and only for the refusal
                    continue
                if isinstance(returned, (list, tuple)):
                    record.recipes += [{"name": t["name"]} for t in returned if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
        self.pm.unregister(record.obj)

    def _break(self, record: PluginRecord, reason: str) -> None:
        """Mark a registered plugin broken: its hooks leave the manager, its algorithms and recipes go unused."""
        record.status, record.error = "broken", reason
        record.recipes = []
        self.pm.unregister(record.obj)

    def _declared_recipes(self, record: PluginRecord) -> list[dict[str, Any]]:
        """The plugin's ``rlplug_recipes()`` tables, checked as recipe-file tables are (name, known fields,
        types); a wrong shape raises ``_Malformed``, which marks the plugin broken."""
        tables: list[dict[str, Any]] = []
        for impl in self.pm.hook.rlplug_recipes.get_hookimpls():
            if impl.plugin is not record.obj:
                continue
            try:
                returned = impl.function()
            except Exception as err:  # noqa: BLE001
                raise _Malformed(f"rlplug_recipes() failed: {type(err).__name__}: {err}") from None
            for table in _returned_list(returned or [], "rlplug_recipes()", "recipe tables (dicts with a 'name')"):
                if not isinstance(table, Mapping) or not isinstance(table.get("name"), str):
                    raise _Malformed(
                        f"rlplug_recipes() is malformed: it returned {type(table).__name__} {_short(table)}, "
                        "not a recipe table (a dict with a 'name')"
                    )
                body = {k: v for k, v in table.items() if k != "name"}
                from ..recipes.files import entry_from_table  # only for a plugin that declares recipes

                try:
                    entry_from_table(table["name"], body, f"plugin {record.dist}")
                except RlplugError as err:
                    raise _Malformed(f"rlplug_recipes() is malformed: {err}") from None
                tables.append(dict(table))
        return tables

    # ---- lookups used by the pipeline and the CLI -------------------------------------------
    def algorithm(self, name: str) -> AlgorithmSpec:
        if name in self.conflicts:
            who = " and ".join(r.label for r in self.conflicts[name])
            raise PluginError(f"algorithm '{name}' is claimed by two plugins: {who}; uninstall one of them")
        if name in self.algorithms:
            return self.algorithms[name]
        for record in self.records:
            if record.status != "ok" and name in (record.name, *record.declared):
                raise PluginError(f"algorithm '{name}' comes from plugin {record.label}, which {self._why(record)}")
        hint = did_you_mean(name, self.algorithms)
        if name in {d.removeprefix("rlplug-") for d in FIRST_PARTY}:
            hint = f" (install it: pip install ./plugins/{name}, i.e. the rlplug-{name} distribution)"
        raise UnknownNameError(f"unknown algorithm '{name}': no installed plugin provides it" + hint)

    @staticmethod
    def _why(record: PluginRecord) -> str:
        if record.status == "broken":
            return f"failed to load: {record.error}"
        return record.error

    def unloaded_recipe(self, name: str) -> PluginRecord | None:
        """The plugin not loaded (incompatible) that declares recipe ``name``, if one does."""
        for record in self.records:
            if record.status != "ok" and any(table.get("name") == name for table in record.recipes):
                return record
        return None

    def recipe_tables(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """``(distribution, tables)`` of every working plugin's ``rlplug_recipes()``, read once when it was registered."""
        return [(record.dist, list(record.recipes)) for record in self.records if record.status == "ok" and record.recipes]


class _Malformed(Exception):
    """A plugin's declaration hook returned something of the wrong shape (the plugin's fault)."""


def _returned_list(value: Any, hook: str, item: str) -> list[Any]:
    """A declaration hook's answer as a list; a dict, a string or a lone object is malformed."""
    if isinstance(value, (list, tuple)):
        return list(value)
    raise _Malformed(f"{hook} is malformed: it returned {type(value).__name__} {_short(value)}, not a list of {item}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
