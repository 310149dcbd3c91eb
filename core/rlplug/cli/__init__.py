"""``rlplug`` command line. Bad input exits 2 with one line on stderr; nothing else is printed for it.

One module per command group, all cheap to import (each command imports what it needs when it runs):
``catalog`` (list, recipes, show, losses, doctor), ``training`` (train, eval, resume), ``bench``,
``dataset``, ``export`` (export, eval --exported), ``compare``; ``parser`` wires them to their options,
``common`` holds what they share; ``tables`` (aligned tables, a small TOML writer), ``extras`` (the optional
extras ``doctor`` lists) and ``guide`` (the plugin guide ``rlplug guide`` prints) support them.

The last line of defence is ``main``: an unexpected exception (a bug, in rlplug or a plugin) is one line
naming it and the file its full traceback was written to, exit code 1 (``--debug`` prints the traceback
instead); a file-system error that names its file is one line and exit code 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import RlplugError
from .parser import build_parser, chosen_command

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    # TorchRL logs INFO lines to stdout at import, which would break --json output
    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    argv = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(chosen_command(argv))  # only the command that runs (the whole parser for --help)
    args = parser.parse_args(argv)
    args.argv = argv  # a launcher hands it on to torchrun
    debug = bool(getattr(args, "debug", False) or os.environ.get("RLPLUG_DEBUG"))
    try:
        code = args.func(args)
        if code == 0 and "WORLD_SIZE" in os.environ:  # set by torchrun: this is a worker (a rank) of a launch
            from ..pipeline.distributed import finish_worker, world

            if world().distributed:
                finish_worker(code)  # does not return
        return code
    except RlplugError as err:
        print(f"rlplug: error: {one_line(err)}", file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stdout = None
        return 0
    except KeyboardInterrupt as err:  # RunInterrupted says where the run stopped and exits 128 + signal
        print(f"rlplug: {one_line(err) or 'interrupted'}", file=sys.stderr)
        return getattr(err, "exit_code", 130)
    except OSError as err:
        if err.filename is None or debug:
            return unexpected(err, args, debug)
        # the outside world (a file that cannot be read or written) rather than a bug: say which file
        other = f" -> {err.filename2}" if err.filename2 else ""
        print(f"rlplug: error: {err.strerror or type(err).__name__}: {err.filename}{other}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - the last line of defence
        return unexpected(err, args, debug)


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def unexpected(err: BaseException, args: object, debug: bool) -> int:
    """Print one line naming ``err`` and where its traceback was written (or, with ``--debug``, the traceback)."""
    import traceback  # here: only an unexpected error needs it

    if debug:
        traceback.print_exc()
        return 1
    text = "".join(traceback.format_exception(err))
    where = write_traceback(text, getattr(args, "argv", []))
    message = one_line(err)
    if len(message) > 200:
        message = message[:197] + "..."
    named = f"{type(err).__name__}: {message}" if message else type(err).__name__
    told = f"the full traceback is in {where}" if where else "the traceback could not be written to a file"
    print(f"rlplug: error: unexpected {named}; {told} (--debug prints it); this is a bug in rlplug or a plugin, please report it", file=sys.stderr)
    return 1


def write_traceback(text: str, argv: list[str]) -> Path | None:
    """Into the run directory this process writes (if any), else ``$TMPDIR/rlplug``; ``None`` if neither works."""
    import tempfile
    from datetime import datetime

    from ..runs.lock import held_run_dirs

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"traceback-{stamp}-{os.getpid()}.txt"
    header = f"rlplug {' '.join(argv)}\n\n"
    for folder in (*held_run_dirs(), Path(tempfile.gettempdir()) / "rlplug"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            path.write_text(header + text)
            return path
        except OSError:
            continue
    return None
