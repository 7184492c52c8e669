"""What the server process tunes, and how its memory goes back to the system. Standard library only.

- ``limit_arenas`` / ``launch_env``: at most two glibc malloc arenas, so that what thirty
  sessions' threads freed is not scattered over a dozen arenas that never shrink;
- ``limit_kernel_cache``: oneDNN keeps a bounded number of compiled kernels;
- ``passive_threads``: torch's OpenMP threads sleep between operations instead of spinning;
- ``settle``: freeze what is alive after a model load, so Streamlit's full collections after each
  script run skip it; ``trim``: glibc's ``malloc_trim``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os


def settle() -> None:
    """Collect garbage once, then freeze what is left (see the module docstring)."""
    gc.collect()
    gc.freeze()


M_ARENA_MAX = -8  # glibc's mallopt parameter number for the most malloc arenas
ARENAS = 2


@functools.cache
def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` glibc malloc arenas in this process from now on (True if it took).

    glibc gives threads that contend their own arena, up to eight per core; a server runs each
    session's script in a thread of its own, and what thirty sessions freed, scattered over a
    dozen arenas, did not go back: 23 % above the idle server two minutes after a class left,
    3 % with two arenas (bench_load, 30 sessions). An explicit ``MALLOC_ARENA_MAX`` wins."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    libc = _glibc()
    return bool(libc and libc.mallopt(M_ARENA_MAX, arenas))


KERNEL_CACHE = 64  # oneDNN kernels kept, one per op and shape


def limit_kernel_cache(capacity: int = KERNEL_CACHE) -> None:
    """At most ``capacity`` compiled oneDNN kernels kept, for a process that has not run torch yet.

    oneDNN keeps one per op and input shape it has seen, 1,024 by default; a server sees every
    input length, so the cache only fills. Over 600 minilm inputs of 3–300 words, 64 left 3 MB
    in the process against 9 MB, at the same speed (0 kept nothing and cost 15 %). oneDNN reads
    ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` when it makes its first kernel; an explicit value wins."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(capacity))


WAIT_POLICY = "PASSIVE"


def passive_threads() -> None:
    """torch's OpenMP threads sleep when an operation ends instead of spinning, for a process that
    has not imported torch yet.

    OpenMP's threads spin about 300,000 times (GOMP_SPINCOUNT) after each parallel region, waiting
    for the next one; a model's forward is hundreds of small regions, and a server shares its cores
    with other sessions' requests. A fresh minilm request's forward cost 295 ms of CPU with two
    spinning threads on a busy 2-core machine and 30 ms with sleeping ones (bench_request_cost).
    libgomp reads ``OMP_WAIT_POLICY`` when torch loads it; an explicit value wins."""
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)


def launch_env() -> dict[str, str]:
    """What a server needs in its environment from its start (``make run`` sets the same): two
    malloc arenas for every thread, those made before ``app.py`` runs too, and OpenMP threads that
    sleep between operations (``passive_threads``). An explicit value wins."""
    return {
        "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", str(ARENAS)),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", WAIT_POLICY),
    }


def trim() -> None:
    """glibc keeps freed memory in its heap; ``malloc_trim`` returns it. A no-op without glibc."""
    libc = _glibc()
    if libc:
        libc.malloc_trim(0)


@functools.cache
def _glibc():
    """The C library with glibc's malloc controls, or None (another libc, another system)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt"):
            return libc
    return None
