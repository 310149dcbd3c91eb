"""One writer per run directory: an exclusive OS lock on ``RUN_DIR/.lock`` while a process writes the run
(and ``hold``: the same kind of lock on any file, for a short write one process at a time may do).

``train`` and ``resume`` take it before they write anything and keep it for the rest of the process;
``eval`` and ``export`` only read and take none. It is a ``flock`` lock, which belongs to the open file
and dies with the process that holds it: a SIGKILL never leaves a stale lock behind. The file holds the
holder's PID, which a refused process names.

A multi-process run (``--nproc``) is locked by its launcher, for the lifetime of all its workers. Rank 0
(the worker that writes) is the launcher's child and would be refused by its parent's lock, so the
launcher tells it through ``RLPLUG_RUN_LOCK`` (``PID:DIR``) that the lock is held on its behalf.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import RunDirBusyError, RunDirError

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are not locked there
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"
HELD_VARIABLE = "RLPLUG_RUN_LOCK"

_held: dict[str, int] = {}
"""This process's locks: resolved run directory -> the open file descriptor that holds the lock."""
_launchers: dict[str, int] = {}
"""Run directories a launcher locked for this worker -> the launcher's PID (this worker's parent)."""


def _key(run_dir: Path) -> str:
    return str(Path(run_dir).resolve())


def os_reason(err: OSError) -> str:
    """``Permission denied``, ``Not a directory``, ... (the OS's words, without the errno number)."""
    return err.strerror or type(err).__name__


def held_here(run_dir: Path) -> bool:
    """Whether this process holds ``run_dir``'s lock, or its launcher holds it for this worker."""
    return _key(run_dir) in _held or _inherited(run_dir)


def held_run_dirs() -> list[Path]:
    """The run directories this process holds locks on, the latest first."""
    return [Path(key) for key in reversed(_held)]


def _inherited(run_dir: Path) -> bool:
    pid, _, where = os.environ.get(HELD_VARIABLE, "").partition(":")
    if where != _key(run_dir) or not pid.isdigit() or holder(run_dir) != int(pid):
        return False
    if os.getppid() == int(pid):
        _launchers[where] = int(pid)
    return True


def check_still_held(run_dir: Path) -> None:
    """In a worker writing under its launcher's lock: stop when the launcher is gone (killed; the workers run
    in a session of their own and live on), since its lock went with it and another process may now write."""
    pid = _launchers.get(_key(run_dir))
    if pid is not None and os.getppid() != pid:
        raise RunDirError(
            f"the launcher (process {pid}) that held the lock of run directory {run_dir} is gone; this worker stops writing it"
        )


def lock_run_dir(run_dir: Path) -> bool:
    """Take ``run_dir``'s lock for the rest of this process, or refuse in one line naming the holder.

    Returns ``True`` when taken now, ``False`` when this process (or its launcher) already holds it.
    The directory must exist. ``RunDirBusyError`` when another process holds it.
    """
    run_dir = Path(run_dir)
    if held_here(run_dir) or fcntl is None:
        return False
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise RunDirError(f"cannot write run directory {run_dir}: {os_reason(err)} ({path})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _read_pid(fd)
        os.close(fd)
        raise RunDirBusyError(busy_message(run_dir, pid)) from None
    except OSError as err:  # a file system without locks (some network mounts)
        os.close(fd)
        raise RunDirError(f"cannot lock run directory {run_dir}: {os_reason(err)} ({path})") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as err:
        os.close(fd)
        raise RunDirError(f"cannot write run directory {run_dir}: {os_reason(err)} ({path})") from None
    _held[_key(run_dir)] = fd
    return True


def unlock_run_dir(run_dir: Path, remove: bool = False) -> None:
    """Give back a lock this process took (``remove``: delete the lock file too, for a directory it made)."""
    fd = _held.pop(_key(run_dir), None)
    if fd is None:
        return
    if remove:
        (Path(run_dir) / LOCK_FILE).unlink(missing_ok=True)
    os.close(fd)


def holder(run_dir: Path) -> int | None:
    """The PID of the process holding ``run_dir``'s lock (0 when it has not written it yet), or ``None``
    when nobody holds it. Writes nothing: the lock file is only opened for reading."""
    if fcntl is None:
        return None
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or 0
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def busy_message(run_dir: Path, pid: int | None) -> str:
    who = f"process {pid}" if pid else "another process"
    return (f"run directory {run_dir} is locked by {who}, which is training or resuming it (one process writes "
            f"a run at a time); wait for it to end or stop it")


def _read_pid(fd: int) -> int | None:
    """The holder's PID. A holder that has just taken the lock writes it a moment later (until then the file
    is empty or names the previous, dead holder), so wait a little for a live one."""
    import time

    for _ in range(50):
        try:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        except OSError:
            return None
        if text.isdigit() and int(text) > 0 and _alive(int(text)):
            return int(text)
        time.sleep(0.01)
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def hand_to_workers(run_dir: Path) -> None:
    """Tell the workers this launcher starts that it holds ``run_dir``'s lock for them (rank 0 writes)."""
    os.environ[HELD_VARIABLE] = f"{os.getpid()}:{_key(run_dir)}"


_files: dict[tuple[str, int], int] = {}
"""Lock files held through ``hold``: (path, thread) -> how many ``hold`` blocks of that thread hold it (re-entrant
in one thread; another thread opens the file again, and ``flock`` then keeps it waiting like another process)."""


@contextmanager
def hold(lock_file: Path, wait: bool, busy: Callable[[str], Exception]) -> Iterator[None]:
    """An exclusive lock on ``lock_file`` for the block, for a short write that one process at a time may do
    (an output path, a study storage's creation). ``wait``: block until it is free; else raise ``busy("process
    PID")`` at once. Re-entrant in one process. The file is removed on release; a process that locked a file
    removed meanwhile opens the new one and tries again, so two can never both hold the lock."""
    import threading

    path = Path(lock_file).resolve()
    key = (str(path), threading.get_ident())
    if key in _files or fcntl is None:
        _files[key] = _files.get(key, 0) + 1
        try:
            yield
        finally:
            _files[key] -= 1
            if not _files[key]:
                del _files[key]
        return
    fd = _acquire(path, wait, busy)
    _files[key] = 1
    try:
        yield
    finally:
        del _files[key]
        path.unlink(missing_ok=True)  # while still locked: a waiter wakes on a removed file and retries
        os.close(fd)


def _acquire(path: Path, wait: bool, busy: Callable[[str], Exception]) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise busy(f"process {pid}" if pid else "another process") from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)  # the holder removed this file as it let go: lock the one that is there now
