# cython: language_level=3
"""A cache of pymalloc's freed arenas (Note [Arena cache] in tensor/_accelerator.py).

Compiled only (there is no ``.py`` source: the pure-Python package has no cache). ``install``
wraps CPython's arena allocator (``PyObject_SetArenaAllocator``) once per process.
"""

from libc.stddef cimport size_t


cdef extern from "Python.h":
    ctypedef struct PyObjectArenaAllocator:
        void *ctx
        void *(*alloc)(void *ctx, size_t size) noexcept nogil
        void (*free)(void *ctx, void *ptr, size_t size) noexcept nogil

    void PyObject_GetArenaAllocator(PyObjectArenaAllocator *allocator)
    void PyObject_SetArenaAllocator(PyObjectArenaAllocator *allocator)


cdef extern from *:
    """
    /* Guards the free list where the GIL does not: interpreters with their own GIL (CPython
       3.12+) share the one arena allocator. Held for a few loads and stores, never across a call. */
    static char distrib_arena_lock = 0;
    static inline void distrib_arena_acquire(void) {
        while (__atomic_test_and_set(&distrib_arena_lock, __ATOMIC_ACQUIRE)) {}
    }
    static inline void distrib_arena_release(void) {
        __atomic_clear(&distrib_arena_lock, __ATOMIC_RELEASE);
    }
    """
    void distrib_arena_acquire() noexcept nogil
    void distrib_arena_release() noexcept nogil


# pymalloc's arena: ARENA_SIZE in CPython 3.10+'s Objects/obmalloc.c on 64-bit builds (ARENA_BITS
# 20, with its radix tree). Only blocks of exactly this size are cached; anything else the arena
# allocator is asked for (the interpreter's frame stack chunks, _PyObject_VirtualAlloc) passes through.
cdef enum:
    _ARENA_SIZE = 1 << 20
# The most arenas the cache can hold whatever the limit asked for (a static array of pointers).
cdef enum:
    _MAX_SLOTS = 4096

cdef PyObjectArenaAllocator _previous
cdef void *_slots[_MAX_SLOTS]
cdef size_t _capacity = 0  # arenas the cache may hold
cdef size_t _count = 0  # arenas it holds now
cdef size_t _hits = 0  # allocations served from the cache
cdef bint _installed = False


cdef void *_alloc(void *ctx, size_t size) noexcept nogil:
    global _count, _hits
    cdef void *ptr = NULL
    if size == _ARENA_SIZE:
        distrib_arena_acquire()
        if _count:
            _count -= 1
            _hits += 1
            ptr = _slots[_count]
        distrib_arena_release()
    return ptr if ptr != NULL else _previous.alloc(_previous.ctx, size)


cdef void _free(void *ctx, void *ptr, size_t size) noexcept nogil:
    global _count
    cdef bint kept = False
    if size == _ARENA_SIZE:
        distrib_arena_acquire()
        if _count < _capacity:
            _slots[_count] = ptr
            _count += 1
            kept = True
        distrib_arena_release()
    if not kept:
        _previous.free(_previous.ctx, ptr, size)


def install(size_t limit_bytes) -> bool:
    """Wrap the arena allocator with a cache of up to ``limit_bytes`` of freed arenas.

    Returns whether this call installed it: False when it was already installed (once per
    process, whoever asks) or when the limit holds no whole arena.
    """
    global _capacity, _installed
    cdef PyObjectArenaAllocator mine
    if _installed or limit_bytes < _ARENA_SIZE:
        return False
    _capacity = min(limit_bytes // _ARENA_SIZE, _MAX_SLOTS)
    PyObject_GetArenaAllocator(&_previous)
    mine.ctx = NULL
    mine.alloc = _alloc
    mine.free = _free
    PyObject_SetArenaAllocator(&mine)
    _installed = True
    return True


def installed() -> bool:
    """Whether the process's arena allocator is this cache's (asked of CPython, not a flag)."""
    cdef PyObjectArenaAllocator current
    PyObject_GetArenaAllocator(&current)
    return current.alloc == _alloc and current.free == _free


def stats() -> dict:
    """``{"arena_bytes", "capacity", "cached", "hits"}``: the arena size, how many arenas the
    cache may hold and holds now, and how many allocations it served."""
    return {"arena_bytes": _ARENA_SIZE, "capacity": _capacity, "cached": _count, "hits": _hits}
