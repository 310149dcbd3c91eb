"""Every option of every command says what it does, its choices and its default (issue 53), and `recipes --zoo`
names the package a pair's environment needs where Gymnasium does not know the env here."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from rlplug.cli.parser import build_parser


def options(parser, path=("rlplug",)):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from options(command, (*path, name))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)) and action.help != argparse.SUPPRESS:
            yield " ".join(path), action


def shortcomings(action) -> list[str]:
    if not action.help:
        return ["no help text"]
    text = action.help % {**vars(action), "prog": "rlplug"} if "%" in action.help else action.help
    found = []
    if action.choices and not all(str(choice) in text for choice in action.choices):
        found.append(f"its choices {list(action.choices)} are not all named")
    if action.default not in (None, False, argparse.SUPPRESS) and "default" not in text:
        found.append(f"its default {action.default!r} is not said")
    return found


def test_every_option_has_help_with_its_choices_and_default():
    missing = [f"{command} {'/'.join(action.option_strings) or action.dest}: {', '.join(problems)}"
               for command, action in options(build_parser()) if (problems := shortcomings(action))]
    assert not missing, "\n".join(missing)


def test_the_walk_reaches_every_command():
    commands = {command for command, _ in options(build_parser())}
    assert {"rlplug train", "rlplug eval", "rlplug dataset collect", "rlplug export", "rlplug tune"} <= commands


@pytest.mark.parametrize(("flag", "expected"), [("--backend", "skrl or torchrl (default: the recipe's backend)")])
def test_train_help_names_the_backends(capsys, flag, expected):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--help"])
    assert expected in " ".join(capsys.readouterr().out.split())


def test_zoo_pairs_name_the_package_their_env_needs(monkeypatch):
    if importlib.util.find_spec("rl_zoo3") is None:  # never imported: importing rl_zoo3 patches gymnasium's TimeLimit
        pytest.skip("the zoo extra is not installed")
    from rlplug.interop.zoo import env_status

    assert env_status("HalfCheetahBulletEnv-v0") == "not registered here: pip install pybullet_envs_gymnasium"
    assert env_status("MiniGrid-FourRooms-v0") == "not registered here: pip install minigrid"
    assert env_status("donkey-generated-track-v0") == "not registered here: pip install gym-donkeycar"
    assert "no package on PyPI" in env_status("NeckEnvRelative-v2")


def _helps(parser, path=("rlplug",)):
    """Every parser's --help text, by its command path."""
    yield " ".join(path), parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from _helps(command, (*path, name))


def test_building_only_the_command_that_runs_changes_none_of_it():
    """issue 51: `rlplug list` builds only list's parser (and imports no other command's module); each command
    built alone has the same options, help and defaults as in the whole parser, and anything but a known command
    after nothing but --debug builds the whole parser (--help lists every command, a typo gets its did-you-mean)."""
    from rlplug.cli.parser import COMMANDS, chosen_command

    whole = dict(_helps(build_parser()))
    for name in COMMANDS:
        alone = dict(_helps(build_parser(name)))
        assert {path: text for path, text in alone.items() if path != "rlplug"} == {
            path: text for path, text in whole.items() if path == f"rlplug {name}" or path.startswith(f"rlplug {name} ")}
        assert [path for path in alone if path.count(" ") == 1] == [f"rlplug {name}"]
    assert list(COMMANDS) == [a.dest for a in next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))._choices_actions]
    assert chosen_command(["list"]) == "list" and chosen_command(["--debug", "show", "x"]) == "show"
    assert chosen_command(["--help", "list"]) is None and chosen_command(["lst"]) is None and chosen_command([]) is None
    assert chosen_command(["--version"]) is None and chosen_command(["--debug"]) is None
    import subprocess
    import sys

    code = ("import sys; from rlplug.cli import main; main(['list']); "
            "print(sorted(m for m in ('rlplug.cli.tune', 'rlplug.cli.export', 'rlplug.cli.compare', 'rlplug.cli.recipe', "
            "'rlplug.pipeline.distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"
