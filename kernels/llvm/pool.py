"""The CPU's thread pool: threads that live as long as the process and take part in one job at a time.

A job is a table of chunks `(fn, lo, hi, after, buffers, params)` (`CHUNK_FIELDS` 64-bit fields each):
run `fn(base + buffers, base + params, lo, hi)` once `after` chunks of the job have finished (those of
the phases before its own), where `base` is the job's (the address of a call's buffer table and
parameters, whose fields are then offsets into it; 0 where they are addresses). The calling thread
publishes the job in the pool's job record, claims chunks with the pool's threads, and returns once
every chunk has finished. All of it is compiled (`POOL_IR`), the pool's threads' whole life too: a chunk
costs no Python, a launch is one call (which a Ctrl-C cannot cut short: it is raised once every chunk has
run, so no thread still writes to the buffers), and a pool thread needs the GIL only to run a chunk that is
Python's (`library.py`'s).

Wake-up. A pool thread that took part in a job keeps looking for the next one for `SPIN_SECONDS`
(yielding its core between looks, as OpenMP's KMP_BLOCKTIME), so back-to-back launches (a loop of
realizes, a training step's kernels) start on every thread at once; after that it blocks on a semaphore
of its own, which the next job it takes part in posts, so an idle process burns no core. A thread
marks itself asleep (its flag in the record) before it last looks for a job, and a job is published
before the flags of its threads are read (both sequentially consistent), so a job either is seen or
wakes its sleeping threads: never both missed. A flag is cleared by exchange, by whichever of the thread
and a launch comes first, so each post is waited for once.

Claims. The record's claim word holds the job's generation and its next chunk; a chunk is claimed by
compare-and-swap of the word, so a thread that looks late, with the generation of a job that has
finished (whose chunk table the caller may have freed), claims nothing: its swap fails. A job is
finished only once every chunk claimed has run, and the next is published (closing the claims of the
one before first, so a thread that read the new job's chunk count cannot claim the old job's chunks
with it) only after that. The generation has 40 bits: a thread would have to stall between two
instructions for 2**40 jobs for a stale claim word to come back.

Threads. One job is in the record at a time (`Pool.lock`); a launch that finds the record taken (another
Python thread's launch) runs its chunks on its own thread, with a job record of its own.
"""
from __future__ import annotations

import ctypes
import threading
import time

# How long a pool thread keeps looking for the next job after one it took part in, before it blocks: longer
# than the Python between the launches of the loops that matter (a realize of a cached graph: tens of
# microseconds; the graph building of an eager training step, an MLP's: about two milliseconds), as waking a
# blocked thread costs 10-50 microseconds per launch; short enough that an idle process stops burning cores
# at once to a person (OpenMP spins 200 ms by default).
SPIN_SECONDS = 0.005
CHUNK_FIELDS = 6
INDEX_BITS = 24  # the claim word: the generation above, the next chunk in these bits
MAX_CHUNKS = (1 << INDEX_BITS) - 1  # an index this high closes a job's claims
MAX_WORKERS = 256
SEMAPHORE_BYTES = 64  # a POSIX semaphore each (32 bytes on 64-bit Linux), on a cache line of its own
# The job record's 64-bit words, the fields that change together on a cache line of their own: the claim
# word (word 0); the chunks finished; the chunk table, its size, the base address, the pool threads that take part;
# then the pool's: the address of its threads' semaphores, how long they spin (nanoseconds), whether they
# stop; then a flag per pool thread, set while it is asleep. A record without pool threads ends before.
FINISHED, TABLE, COUNT, BASE, HELPERS, SEMAPHORES, SPIN, STOP, FLAGS = 8, 16, 17, 18, 19, 24, 25, 26, 32
JOB_WORDS = FLAGS + MAX_WORKERS

# `launch(job, table, n, base, helpers)`: closes the claims of the job before, sets up the new one and opens
# it, wakes those of its `helpers` pool threads that sleep, then claims chunks until none is left and waits
# until every chunk has finished. `serve(job, k, seen, clock)`: pool thread `k`'s life, from generation
# `seen` on: it takes part in each new job it is one of the helpers of, looking for the next for the
# record's spin (nanoseconds of clock `clock`) after each, then sleeps until woken; it returns once told to
# stop. `stop(job, threads)`: tells the pool's threads to stop, and wakes them. Waiting threads yield their
# core, which a thread they wait for may need.
POOL_IR = f"""
declare i32 @sched_yield()
declare i32 @clock_gettime(i32, ptr)
declare i32 @sem_wait(ptr)
declare i32 @sem_post(ptr)

define private i64 @get(ptr %job, i64 %i) {{
entry:
  %at = getelementptr i64, ptr %job, i64 %i
  %value = load atomic i64, ptr %at acquire, align 8
  ret i64 %value
}}

define private void @set(ptr %job, i64 %i, i64 %value) {{
entry:
  %at = getelementptr i64, ptr %job, i64 %i
  store atomic i64 %value, ptr %at release, align 8
  ret void
}}

define private i64 @field(ptr %chunk, i64 %i) {{
entry:
  %at = getelementptr i64, ptr %chunk, i64 %i
  %value = load i64, ptr %at
  ret i64 %value
}}

define private i64 @now(i32 %clock) {{
entry:
  %time = alloca [2 x i64], align 8
  %ignored = call i32 @clock_gettime(i32 %clock, ptr %time)
  %seconds = load i64, ptr %time
  %nanoseconds_at = getelementptr i64, ptr %time, i64 1
  %nanoseconds = load i64, ptr %nanoseconds_at
  %whole = mul i64 %seconds, 1000000000
  %total = add i64 %whole, %nanoseconds
  ret i64 %total
}}

define private void @wait_for(ptr %finished, i64 %target) {{
entry:
  br label %check
check:
  %count = load atomic i64, ptr %finished acquire, align 8
  %reached = icmp sge i64 %count, %target
  br i1 %reached, label %done, label %yield
yield:
  %ignored = call i32 @sched_yield()
  br label %check
done:
  ret void
}}

define private ptr @semaphore(ptr %job, i64 %k) {{
entry:
  %semaphores = call i64 @get(ptr %job, i64 {SEMAPHORES})
  %offset = mul i64 %k, {SEMAPHORE_BYTES}
  %address = add i64 %semaphores, %offset
  %semaphore = inttoptr i64 %address to ptr
  ret ptr %semaphore
}}

; Waits until the semaphore is posted (again where a signal cut the wait short).
define private void @sleep(ptr %semaphore) {{
entry:
  br label %wait
wait:
  %failed = call i32 @sem_wait(ptr %semaphore)
  %again = icmp ne i32 %failed, 0
  br i1 %again, label %wait, label %done
done:
  ret void
}}

; Wakes pool thread %k if it sleeps: the first to clear its flag, the thread or a waker, settles it.
define private void @wake(ptr %job, i64 %k) {{
entry:
  %flag_index = add i64 %k, {FLAGS}
  %flag_at = getelementptr i64, ptr %job, i64 %flag_index
  %flag = load atomic i64, ptr %flag_at seq_cst, align 8
  %set = icmp ne i64 %flag, 0
  br i1 %set, label %clear, label %done
clear:
  %was = atomicrmw xchg ptr %flag_at, i64 0 seq_cst
  %asleep = icmp ne i64 %was, 0
  br i1 %asleep, label %post, label %done
post:
  %semaphore = call ptr @semaphore(ptr %job, i64 %k)
  %ignored = call i32 @sem_post(ptr %semaphore)
  br label %done
done:
  ret void
}}

define private void @wake_all(ptr %job, i64 %count) {{
entry:
  br label %check
check:
  %k = phi i64 [0, %entry], [%k_next, %next]
  %more = icmp slt i64 %k, %count
  br i1 %more, label %next, label %done
next:
  call void @wake(ptr %job, i64 %k)
  %k_next = add i64 %k, 1
  br label %check
done:
  ret void
}}

; Claims the chunks of generation %gen one at a time and runs each, until none is left (or the job is
; another's: then its claim word has moved on, and the swap fails).
define private void @claim(ptr %job, i64 %gen) {{
entry:
  %n = call i64 @get(ptr %job, i64 {COUNT})
  %finished = getelementptr i64, ptr %job, i64 {FINISHED}
  br label %next
next:
  %word = load atomic i64, ptr %job monotonic, align 8
  %word_gen = lshr i64 %word, {INDEX_BITS}
  %i = and i64 %word, {MAX_CHUNKS}
  %ours = icmp eq i64 %word_gen, %gen
  %left = icmp slt i64 %i, %n
  %open = and i1 %ours, %left
  br i1 %open, label %try, label %done
try:
  %claimed = add i64 %word, 1
  %swap = cmpxchg ptr %job, i64 %word, i64 %claimed acquire monotonic
  %won = extractvalue {{ i64, i1 }} %swap, 1
  br i1 %won, label %run, label %next
run:
  %table_address = call i64 @get(ptr %job, i64 {TABLE})
  %table = inttoptr i64 %table_address to ptr
  %base = call i64 @get(ptr %job, i64 {BASE})
  %chunk = getelementptr [{CHUNK_FIELDS} x i64], ptr %table, i64 %i
  %after = call i64 @field(ptr %chunk, i64 3)
  call void @wait_for(ptr %finished, i64 %after)
  %fn = load ptr, ptr %chunk
  %lo = call i64 @field(ptr %chunk, i64 1)
  %hi = call i64 @field(ptr %chunk, i64 2)
  %buffers_offset = call i64 @field(ptr %chunk, i64 4)
  %buffers_address = add i64 %base, %buffers_offset
  %buffers = inttoptr i64 %buffers_address to ptr
  %params_offset = call i64 @field(ptr %chunk, i64 5)
  %params_address = add i64 %base, %params_offset
  %params = inttoptr i64 %params_address to ptr
  call void %fn(ptr %buffers, ptr %params, i64 %lo, i64 %hi)
  %ignored = atomicrmw add ptr %finished, i64 1 release
  br label %next
done:
  ret void
}}

define void @launch(ptr %job, ptr %table, i64 %n, i64 %base, i64 %helpers) {{
entry:
  %word = load atomic i64, ptr %job monotonic, align 8
  %closed = or i64 %word, {MAX_CHUNKS}
  store atomic i64 %closed, ptr %job monotonic, align 8
  call void @set(ptr %job, i64 {FINISHED}, i64 0)
  %table_address = ptrtoint ptr %table to i64
  call void @set(ptr %job, i64 {TABLE}, i64 %table_address)
  call void @set(ptr %job, i64 {COUNT}, i64 %n)
  call void @set(ptr %job, i64 {BASE}, i64 %base)
  call void @set(ptr %job, i64 {HELPERS}, i64 %helpers)
  %gen = lshr i64 %word, {INDEX_BITS}
  %next_gen = add i64 %gen, 1
  %wrapped = and i64 %next_gen, {(1 << (64 - INDEX_BITS)) - 1}
  %opened = shl i64 %wrapped, {INDEX_BITS}
  store atomic i64 %opened, ptr %job seq_cst, align 8
  call void @wake_all(ptr %job, i64 %helpers)
  call void @claim(ptr %job, i64 %wrapped)
  %finished = getelementptr i64, ptr %job, i64 {FINISHED}
  call void @wait_for(ptr %finished, i64 %n)
  ret void
}}

define void @serve(ptr %job, i64 %k, i64 %seen, i32 %clock) {{
entry:
  %flag_index = add i64 %k, {FLAGS}
  %flag_at = getelementptr i64, ptr %job, i64 %flag_index
  %stop_at = getelementptr i64, ptr %job, i64 {STOP}
  %semaphore = call ptr @semaphore(ptr %job, i64 %k)
  %start = call i64 @now(i32 %clock)
  br label %look
look:
  %last = phi i64 [%seen, %entry], [%gen, %skip], [%gen, %took], [%last, %yield], [%last, %cancel],
                  [%last, %asleep]
  %deadline = phi i64 [%start, %entry], [%deadline, %skip], [%took_deadline, %took], [%deadline, %yield],
                      [%deadline, %cancel], [%woken_at, %asleep]
  %stop = load atomic i64, ptr %stop_at acquire, align 8
  %stopped = icmp ne i64 %stop, 0
  br i1 %stopped, label %done, label %check
check:
  %word = load atomic i64, ptr %job acquire, align 8
  %gen = lshr i64 %word, {INDEX_BITS}
  %new = icmp ne i64 %gen, %last
  br i1 %new, label %fresh, label %idle
fresh:
  %helpers = call i64 @get(ptr %job, i64 {HELPERS})
  %mine = icmp slt i64 %k, %helpers
  br i1 %mine, label %take, label %skip
skip:
  br label %look
take:
  call void @claim(ptr %job, i64 %gen)
  %spin = call i64 @get(ptr %job, i64 {SPIN})
  %took_at = call i64 @now(i32 %clock)
  %took_deadline = add i64 %took_at, %spin
  br label %took
took:
  br label %look
idle:
  %time = call i64 @now(i32 %clock)
  %late = icmp sge i64 %time, %deadline
  br i1 %late, label %tired, label %yield
yield:
  %ignored = call i32 @sched_yield()
  br label %look
tired:
  store atomic i64 1, ptr %flag_at seq_cst, align 8
  %last_word = load atomic i64, ptr %job seq_cst, align 8
  %last_gen = lshr i64 %last_word, {INDEX_BITS}
  %last_stop = load atomic i64, ptr %stop_at seq_cst, align 8
  %no_job = icmp eq i64 %last_gen, %last
  %no_stop = icmp eq i64 %last_stop, 0
  %quiet = and i1 %no_job, %no_stop
  br i1 %quiet, label %asleep, label %awake
awake:
  %was = atomicrmw xchg ptr %flag_at, i64 0 seq_cst
  %taken = icmp eq i64 %was, 0
  br i1 %taken, label %settle, label %cancel
settle:
  call void @sleep(ptr %semaphore)  ; a waker cleared the flag first: its post is this thread's to take
  br label %cancel
cancel:
  br label %look
asleep:
  call void @sleep(ptr %semaphore)
  %woken_at = call i64 @now(i32 %clock)
  br label %look
done:
  ret void
}}

define void @stop(ptr %job, i64 %threads) {{
entry:
  %stop_at = getelementptr i64, ptr %job, i64 {STOP}
  store atomic i64 1, ptr %stop_at seq_cst, align 8
  call void @wake_all(ptr %job, i64 %threads)
  ret void
}}
"""
FUNCTIONS = ("launch", "serve", "stop")
_Launch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_Serve = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int)
_Stop = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.sem_init.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]


class Pool:
    """Threads, started as jobs first need them and kept until `close`, that take part in the jobs `run`
    launches; given the addresses of `POOL_IR`'s `FUNCTIONS`, compiled, and how long its threads spin."""

    def __init__(self, launch: int, serve: int, stop: int, spin_seconds: float = SPIN_SECONDS) -> None:
        self._launch, self._serve, self._stop = _Launch(launch), _Serve(serve), _Stop(stop)
        # the record and the semaphores on cache lines of their own (one line more, to align them): the
        # record's claim word and finished count are the threads' hottest
        self._memory = (ctypes.c_int64 * (JOB_WORDS + 8))()
        self.job = ctypes.addressof(self._memory) + -ctypes.addressof(self._memory) % 64
        self._semaphores = (ctypes.c_char * (SEMAPHORE_BYTES * (MAX_WORKERS + 1)))()
        record = (ctypes.c_int64 * JOB_WORDS).from_address(self.job)
        record[SEMAPHORES] = ctypes.addressof(self._semaphores) + -ctypes.addressof(self._semaphores) % 64
        record[SPIN] = int(spin_seconds * 1e9)
        self.lock = threading.Lock()  # held while a job is in the record
        self.threads: list[threading.Thread] = []

    def run(self, table: ctypes.Array, n: int, base: int, threads: int) -> None:
        """Run chunks `[0, n)` of `table` (see the module docstring) on the calling thread and up to
        `threads - 1` of the pool's, claiming them one at a time; return once every chunk has run."""
        if n > MAX_CHUNKS:
            raise ValueError(f"a job of {n} chunks: at most {MAX_CHUNKS} fit the claim word")
        helpers = min(threads - 1, MAX_WORKERS)
        if helpers > 0 and self.lock.acquire(blocking=False):
            try:
                if len(self.threads) < helpers:
                    self._start(helpers)
                self._launch(self.job, table, n, base, helpers)
            finally:
                self.lock.release()
        else:  # one thread, or another thread's job is in the record: a record of its own, no pool threads
            record = (ctypes.c_int64 * FLAGS)()
            self._launch(record, table, n, base, 0)

    def _start(self, count: int) -> None:
        """Start pool threads until there are `count` (under `lock`: no job is in the record)."""
        seen = ctypes.c_int64.from_address(self.job).value >> INDEX_BITS
        semaphores = ctypes.c_int64.from_address(self.job + 8 * SEMAPHORES).value
        while len(self.threads) < count:
            k = len(self.threads)
            if _libc.sem_init(semaphores + SEMAPHORE_BYTES * k, 0, 0):
                raise OSError(ctypes.get_errno(), "sem_init: a pool thread's semaphore")
            thread = threading.Thread(target=self._work, args=(k, seen), name=f"lazytensor-{k}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def _work(self, k: int, seen: int) -> None:
        """Pool thread `k`'s life (a method: the thread keeps the pool, and so its record, alive)."""
        self._serve(self.job, k, seen, time.CLOCK_MONOTONIC)

    def close(self) -> None:
        """Stop the pool's threads (at exit): each finishes the chunks it claimed and ends; the calling thread
        of a launch still running claims those left. Later jobs run on their calling thread. (Not under
        `lock`, which in a forked child may be held by a thread of the parent's that is not there.)"""
        self._stop(self.job, len(self.threads))
        for thread in self.threads:
            thread.join()


__all__ = ["CHUNK_FIELDS", "FUNCTIONS", "MAX_CHUNKS", "POOL_IR", "SPIN_SECONDS", "Pool"]
