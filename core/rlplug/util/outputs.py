"""What an output option may replace, and how it is replaced.

An output path (``--out``, ``--report``, a dataset name with ``--overwrite``) is written only when nothing is
there or what is there is provably rlplug's own output of the same kind, recognised by what rlplug puts in it:

* a dataset: a directory holding only ``metadata.json`` (with rlplug's ``format``, ``rlplug`` version and
  ``files`` records) and ``data/``;
* an exported policy: a TorchScript zip with the ``extra/rlplug.json`` record, or an ONNX model with the
  ``rlplug.json`` metadata entry;
* a tuned recipe: a TOML file whose first line is ``# Tuned by rlplug tune``;
* a tune report: a Markdown file titled ``# Tuning ...`` whose summary starts ``Tuned by rlplug tune (rlplug``;
* a bench report: a Markdown file whose first line is ``# rlplug benchmarks``, and its JSON, an object with
  ``machine``, ``command`` and ``rows``;
* a picture (``compare``, the tune report's plots): a PNG whose ``Software`` text chunk starts with ``rlplug``.

Anything else (a run directory, a folder of the user's, the current directory, a recipe file) is refused in one
``OutputError`` line naming what is there, and so is a path that is one of the command's own inputs. Files are
written beside and renamed into place; a directory is swapped in so that the old one is back if the swap fails.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import OutputError

PNG_SOFTWARE = "rlplug"
"""The start of the ``Software`` text chunk of every PNG rlplug writes as an output (``png_metadata``)."""
BENCH_REPORT_HEAD = "# rlplug benchmarks"
TUNED_RECIPE_HEAD = "# Tuned by rlplug tune"
_SNIFF = 1 << 16
"""Bytes read to recognise a file: its first line, a PNG's text chunks (written before the image data)."""


@dataclass(frozen=True)
class Kind:
    """A kind of output: what it is called and how an earlier one is recognised."""

    noun: str
    directory: bool
    owned: Callable[[Path], bool]


def _first_line(path: Path) -> str:
    return _head(path).split("\n", 1)[0].strip()


def _dataset_dir(path: Path) -> bool:
    from ..data.datasets import DATA, METADATA

    names = {p.name for p in path.iterdir()}
    if METADATA not in names or not names <= {METADATA, DATA}:
        return False
    try:
        meta = json.loads((path / METADATA).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and {"format", "rlplug", "files"} <= meta.keys()


def _exported_policy(path: Path) -> bool:
    from ..results.export import METADATA_KEY

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return any(name.endswith(f"/extra/{METADATA_KEY}") for name in archive.namelist())
    try:
        import onnx
    except ImportError:
        return False  # cannot be told apart from any other file here
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - onnx raises its own errors for a file that is not a model
        return False
    return any(prop.key == METADATA_KEY for prop in model.metadata_props)


def _png(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(_SNIFF)
    return head.startswith(b"\x89PNG\r\n\x1a\n") and b"tEXtSoftware\x00" + PNG_SOFTWARE.encode() in head


def _bench_report(path: Path) -> bool:
    return _first_line(path) == BENCH_REPORT_HEAD


DATASET = Kind("dataset", True, _dataset_dir)
EXPORTED_POLICY = Kind("exported policy", False, _exported_policy)
TUNED_RECIPE = Kind("tuned recipe", False, lambda p: _first_line(p).startswith(TUNED_RECIPE_HEAD))
TUNE_REPORT = Kind("tune report", False, lambda p: _first_line(p).startswith("# Tuning ")
                   and f"\n    {TUNED_RECIPE_HEAD[2:]} (rlplug " in _head(p))  # its summary, as the tuned recipe's head
BENCH_REPORT = Kind("bench report", False, _bench_report)
TORCHRL_CONFIG = Kind("TorchRL trainer config", False,  # show --format hydra's first line (rlplug.interop.torchrl_hydra)
                      lambda p: _first_line(p).startswith("# TorchRL ") and " trainer config for rlplug recipe " in _first_line(p))
PICTURE = Kind("picture", False, _png)


def _bench_rows(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"machine", "command", "rows"} <= data.keys()


BENCH_JSON = Kind("bench report's JSON", False, _bench_rows)


def png_metadata(what: str) -> dict[str, str]:
    """``savefig(metadata=...)`` for a PNG rlplug writes, so a later run recognises it as its own."""
    from .. import __version__

    return {"Software": f"{PNG_SOFTWARE} {__version__} {what}"}


# ---- what is there --------------------------------------------------------------------------------


def _listing(path: Path, limit: int = 3) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = ", ".join(names[:limit]) + (f", ... {len(names)} entries" if len(names) > limit else "")
    return shown


def describe(path: Path) -> str:
    """What is at ``path``, for a refusal: ``the current directory``, ``a run directory (summary.json, ...)``."""
    try:
        if path.is_dir():
            if path.resolve() == Path.cwd().resolve():
                return "the current directory"
            if Path.home().exists() and path.resolve() == Path.home().resolve():
                return "the home directory"
            if _run_dir(path):
                marks = [n for n in ("recipe.json", "summary.json", "checkpoints/") if (path / n.rstrip("/")).exists()]
                return f"a run directory ({', '.join(marks)})"
            if not any(path.iterdir()):
                return "an empty directory"
            return f"a directory ({_listing(path)})"
        if path.is_file():
            for run_dir in (path.parent, path.parent.parent):
                if _run_dir(run_dir):
                    return f"a file of run directory {run_dir} ({path.relative_to(run_dir)})"
            if path.suffix == ".toml" and "[recipes." in _head(path):
                return "a recipe file"
            return f"a file ({path.stat().st_size} bytes)"
        return "something that is neither a file nor a directory"
    except OSError as err:
        return f"unreadable ({err.strerror or type(err).__name__})"


def _run_dir(path: Path) -> bool:
    return (path / "recipe.json").is_file() or (path / "checkpoints").is_dir()


def _head(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(_SNIFF).decode("utf-8", "replace")


def _owned(path: Path, kind: Kind) -> bool:
    try:
        if kind.directory != path.is_dir() or path.is_symlink():
            return False
        return kind.owned(path)
    except OSError:
        return False


def check_output(path: Path, kind: Kind, option: str, inputs: Iterable[tuple[Path, str]] = (), hint: str = "") -> bool:
    """Refuse ``path`` as the output of ``option`` unless it is absent or an earlier ``kind`` rlplug wrote and
    none of the command's ``inputs`` (``(path, what it is)``). Returns whether there is one to replace."""
    path = Path(path)
    hint = hint or f"choose another {option.split()[-1]}"
    if not os.path.lexists(path):
        return False
    for source, what in inputs:
        try:
            same = Path(source).exists() and os.path.samefile(path, source)
        except OSError:
            same = False
        if same:
            raise OutputError(f"{option}: {path} is {what}, an input of this command; {hint}")
    if _owned(path, kind):
        return True
    raise OutputError(f"{option}: {path} is {describe(path)}, not {_article(kind.noun)} rlplug wrote; "
                      f"{hint} or remove it yourself")  # fmt: skip


def _article(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


# ---- writing --------------------------------------------------------------------------------------


def write_file(path: Path, kind: Kind, option: str, write: Callable[[Path], object],
               inputs: Iterable[tuple[Path, str]] = ()) -> Path:  # fmt: skip
    """Check ``path`` (``check_output``), then write it atomically (``replace_atomically``)."""
    inputs = list(inputs)
    check_output(Path(path), kind, option, inputs)

    def checked(partial: Path) -> None:
        write(partial)
        check_output(Path(path), kind, option, inputs)  # what appeared meanwhile is no more replaceable than before

    return replace_atomically(Path(path), checked, kind.noun)


def os_reason(err: OSError) -> str:
    """The OS's words for a failed write (``No space left on device``, ``Permission denied``, ``Read-only file
    system``), without the errno number."""
    return err.strerror or type(err).__name__


def write_failed(what: str, path: Path, err: OSError, existed: bool) -> OutputError:
    """The one line for a write that failed: what, where, why, and what is left (the earlier file, untouched, or
    nothing: no partial file is ever left under the final name)."""
    kept = f"the earlier {what.split()[-1]} there is kept as it was" if existed else "nothing was written there"
    return OutputError(f"cannot write {what} {path}: {os_reason(err)}; {kept}")


def umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``): setting it to
    read it back would race with another thread creating a file meanwhile."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temporary_sibling(path: Path, suffix: str, directory: bool = False, prefix: str | None = None) -> Path:
    """A new temporary file (or directory) beside ``path`` with the mode an ordinary ``open()`` (``mkdir()``) would
    give it under the umask: ``tempfile`` makes them 0600 (0700), private to their writer, and the rename keeps that
    mode, so a checkpoint, an export or a dataset would be unreadable to a teammate or a serving process under
    another user while every other file of the run is readable (0644 under umask 022)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        name = tempfile.mkdtemp(prefix=prefix or f".{path.name}.", suffix=suffix, dir=path.parent)
        os.chmod(name, 0o777 & ~umask())
    else:
        fd, name = tempfile.mkstemp(prefix=prefix or f".{path.stem}.", suffix=suffix, dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~umask())
        finally:
            os.close(fd)
    return Path(name)


def replace_atomically(path: Path, write: Callable[[Path], object], what: str = "file") -> Path:
    """``write(temporary sibling)``, then rename it to ``path``: a failed or interrupted write leaves what was
    there, and a reader never sees half a file. A failure of the file system (disk full, permission denied, a
    read-only directory) is one ``OutputError`` line naming ``what``, the path and the cause."""
    path = Path(path)
    existed = os.path.lexists(path)
    partial: Path | None = None
    try:
        partial = temporary_sibling(path, f".partial{path.suffix}")
        write(partial)
        os.replace(partial, path)
    except OSError as err:
        raise write_failed(what, path, err, existed) from None
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
    return path


def swap_in_dir(partial: Path, path: Path) -> None:
    """Rename the finished directory ``partial`` to ``path``. An existing ``path`` is moved aside first and
    deleted only once the new one is in place; a failed rename puts it back."""
    if not os.path.lexists(path):
        os.replace(partial, path)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
    os.replace(path, aside)  # onto the empty directory mkdtemp made: a rename, nothing copied
    try:
        os.replace(partial, path)
    except BaseException:
        os.replace(aside, path)
        raise
    shutil.rmtree(aside, ignore_errors=True)


@contextmanager
def writing(path: Path, what: str) -> Iterator[None]:
    """Hold the lock on writing ``path`` (``.NAME.lock`` beside it) for the block, or refuse in one line when
    another process holds it: two commands writing one output at once would silently lose one's work."""
    from ..runs.lock import hold, os_reason

    path = Path(path)
    where = path.resolve()  # "." locks beside the current directory, not inside it

    def busy(who: str) -> OutputError:
        return OutputError(f"{what} {path} is being written by {who}; wait for it to end or choose another name")

    with ExitStack() as stack:
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(hold(where.parent / f".{where.name}.lock", wait=False, busy=busy))
        except OSError as err:
            raise OutputError(f"cannot write {what} {path}: {os_reason(err)}") from None
        yield
