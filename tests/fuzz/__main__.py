"""The long-running fuzzer: `python -m tests.fuzz --help`.

    python -m tests.fuzz --minutes 60 --threads 2                  # CPU, 2 threads, every check in turn
    python -m tests.fuzz --device triton --minutes 30 --check forward
    python -m tests.fuzz --replay repros/forward-value-123.json    # run a saved record again

A supervisor process runs the cases in a worker process, which writes the case it is on to a file first:
a case that kills the worker (a segfault, an abort) or hangs it is found there, shrunk with each candidate
in a subprocess, and reported like any other failure. Each distinct failure (its check, kind and key) is
shrunk and written to `--out` as a standalone repro script (plain Python with lazytensor and torch), next
to the record of draws that rebuilds it (`--replay`). Counts per check are printed every minute and at
the end.

Environment is set before lazytensor is imported: `--threads` sets LT_NUM_THREADS (and, with 2 or more,
lowers the runtime's thresholds for splitting work across threads and the scheduler's for the contraction
template, so that the fuzzer's small kernels are split and its products run on the template too), `--device
triton` sets LT_DEVICE=cuda and TRITON_INTERPRET=1.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", default="all", choices=["all", "forward", "grad", "jit", "errors"])
    p.add_argument("--device", default="cpu", choices=["cpu", "triton"])
    p.add_argument("--threads", type=int, default=1, help="LT_NUM_THREADS (CPU)")
    p.add_argument("--tiling", default="default", choices=["default", "tiny"],
                   help="Triton block sizes: 'tiny' makes every reduction loop and every axis masked, and runs "
                        "every product on the contraction template")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--cases", type=int, default=0, help="stop after this many cases (0: the time decides)")
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000, help="the first case's seed")
    p.add_argument("--out", default=str(ROOT / "repros"), help="where repro scripts are written")
    p.add_argument("--shrink-seconds", type=float, default=120.0)
    p.add_argument("--max-numel", type=int, default=0, help="largest tensor (default: 2048, 512 under Triton)")
    p.add_argument("--replay", help="a .json record written next to a repro: run that case and print the verdict")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # the supervisor's status file
    p.add_argument("--crash-check", nargs=2, help=argparse.SUPPRESS)  # check, record file: exit by signal or not
    return p.parse_args(argv)


def environment(args: argparse.Namespace) -> dict[str, str]:
    """The variables lazytensor must see when it is imported."""
    env = {"LT_NUM_THREADS": str(args.threads)}
    if args.device == "triton":
        env.update(LT_DEVICE="cuda", TRITON_INTERPRET="1")
        env.setdefault("LT_CACHE_DIR", os.environ.get("LT_CACHE_DIR") or tempfile.mkdtemp(prefix="lt-fuzz-cache-"))
    return env


def setup(args: argparse.Namespace) -> None:
    """Import lazytensor for this process's mode (called after `environment` is in os.environ)."""
    sys.path.insert(0, str(TESTS))
    import triton_interpreter  # noqa: F401  (torch storage for Triton's interpreter)
    if args.threads >= 2:
        from .modes import small_products_on_the_template, split_small_work
        split_small_work()
        small_products_on_the_template()
    if args.tiling == "tiny":
        from .modes import small_products_on_the_template, tiny_tiling
        tiny_tiling()
        small_products_on_the_template()


def checks(args: argparse.Namespace) -> list[str]:
    from .runner import CHECKS
    return list(CHECKS) if args.check == "all" else [args.check]


def max_numel(args: argparse.Namespace) -> int:
    return args.max_numel or (512 if args.device == "triton" else 2048)


def command_line(args: argparse.Namespace) -> str:
    parts = ["python -m tests.fuzz", f"--device {args.device}", f"--threads {args.threads}"]
    if args.tiling != "default":
        parts.append(f"--tiling {args.tiling}")
    return " ".join(parts)


# ---- the worker ----------------------------------------------------------------------------------------------


def work(args: argparse.Namespace) -> None:
    """Run cases from --seed until the time or the case count is up, writing each failure's repro."""
    import warnings
    warnings.filterwarnings("ignore")
    from .check import Outcome
    from .runner import Tally, attempt, shrink
    status = Path(args.worker)
    out = Path(args.out)
    names = checks(args)
    tallies = {n: Tally() for n in names}
    seen: set[tuple[str, tuple[str, str]]] = set()
    deadline = time.monotonic() + args.minutes * 60
    last_report = time.monotonic()
    seed = args.seed
    while time.monotonic() < deadline and (not args.cases or sum(t.cases for t in tallies.values()) < args.cases):
        name = names[seed % len(names)]
        status.write_text(json.dumps({"check": name, "seed": seed, "tallies": {n: vars(t) | {"failures": {
            f"{k}|{s}": c for (k, s), c in t.failures.items()}} for n, t in tallies.items()}}))
        t0 = time.monotonic()
        _, record, verdict = attempt(name, None, seed, max_numel(args))
        tallies[name].add(verdict, time.monotonic() - t0)
        if not isinstance(verdict, Outcome) and (name, verdict.signature) not in seen:
            seen.add((name, verdict.signature))
            print(f"[{name} seed {seed}] {verdict}", flush=True)
            shrunk = shrink(name, record, verdict, max_numel(args), args.shrink_seconds)
            write(out, name, seed, shrunk, args)
        if time.monotonic() - last_report > 60:
            last_report = time.monotonic()
            for n, t in tallies.items():
                print(t.line(n), flush=True)
        seed += 1
    status.write_text(json.dumps({"done": True, "next": seed, "tallies": {n: t.line(n) for n, t in tallies.items()}}))
    for n, t in tallies.items():
        print(t.line(n), flush=True)


def write(out: Path, name: str, seed: int, shrunk, args: argparse.Namespace) -> Path:
    """The repro script and the record it was made from."""
    from .runner import repro
    out.mkdir(parents=True, exist_ok=True)
    f = shrunk.failure
    stem = "-".join(x for x in (name, f.kind, "".join(c if c.isalnum() else "_" for c in f.key)[:40], str(seed)) if x)
    path = out / f"{stem}.py"
    env = " ".join(f"{k}={v}" for k, v in environment(args).items() if k != "LT_CACHE_DIR")
    path.write_text(repro(name, shrunk, f"{command_line(args)} --check {name} (seed {seed})", path.name, env))
    (out / f"{stem}.json").write_text(json.dumps({"check": name, "record": shrunk.record, "device": args.device,
                                                  "threads": args.threads, "tiling": args.tiling}))
    print(f"  shrunk in {shrunk.attempts} attempts to {len(shrunk.record)} draws: {path}", flush=True)
    return path


# ---- the supervisor ---------------------------------------------------------------------------------------


HANG_SECONDS = 120  # a case takes seconds; a hang is shrunk with each candidate given this long


def supervise(args: argparse.Namespace, argv: list[str]) -> int:
    """Run workers until the time is up, restarting after a crash (which is shrunk and written)."""
    end = time.monotonic() + args.minutes * 60
    env = {**os.environ, **environment(args)}
    seed = args.seed
    with tempfile.TemporaryDirectory() as tmp:
        status = Path(tmp) / "status.json"
        while time.monotonic() < end - 5:
            minutes = (end - time.monotonic()) / 60
            cmd = [sys.executable, "-m", "tests.fuzz", *strip(argv), "--seed", str(seed), "--minutes", f"{minutes:.3f}",
                   "--worker", str(status)]
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
            code = wait(proc, status)
            state = json.loads(status.read_text()) if status.exists() else {}
            if code == 0 or state.get("done"):
                return 0
            if "seed" not in state:
                print(f"the worker failed to start (exit {code})", file=sys.stderr)
                return 1
            print(f"[{state['check']} seed {state['seed']}] the worker died (exit {code}): shrinking in "
                  "subprocesses", flush=True)
            crash(args, state["check"], state["seed"], env, code)
            seed = state["seed"] + 1
    return 0


def strip(argv: list[str]) -> list[str]:
    """The user's arguments without --seed and --minutes (the supervisor sets them per worker)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--seed", "--minutes"):
            skip = True
            continue
        if a.startswith(("--seed=", "--minutes=")):
            continue
        out.append(a)
    return out


def wait(proc: subprocess.Popen, status: Path) -> int:
    """Wait for the worker; kill it if its status file has not moved for HANG_SECONDS."""
    while True:
        try:
            return proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if status.exists() and time.time() - status.stat().st_mtime > HANG_SECONDS:
                proc.kill()
                proc.wait()
                return -9


def crash(args: argparse.Namespace, name: str, seed: int, env: dict[str, str], code: int) -> None:
    """Shrink a case that kills (or hangs) the process, each candidate run in a subprocess."""
    sys.path.insert(0, str(TESTS))
    from . import gen
    from .check import Failure
    from .runner import make, shrink

    ch = gen.Choices(seed)
    make(name, ch, max_numel(args))
    failure = Failure("crash", f"the process died (exit code {code})", f"exit{code}")

    def fails(record: list[int]):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(record, fh)
        cmd = [sys.executable, "-m", "tests.fuzz", *strip(sys.argv[1:]), "--crash-check", name, fh.name]
        try:
            result = subprocess.run(cmd, cwd=ROOT, env=env, timeout=HANG_SECONDS, capture_output=True, check=False)
            died = result.returncode < 0
        except subprocess.TimeoutExpired:
            died = code == -9
        if not died:
            return None
        rec = json.loads(Path(fh.name).read_text())
        return make(name, gen.Choices(None, rec), max_numel(args)), rec, failure

    shrunk = shrink(name, ch.record, failure, max_numel(args), args.shrink_seconds, fails)
    write(Path(args.out), name, seed, shrunk, args)


def crash_check(args: argparse.Namespace) -> int:
    """Run one candidate of a crash's shrinking (its record in a file, where its canonical record is written
    back): the caller only looks at whether this process dies."""
    from . import gen
    from .runner import make, run
    name, path = args.crash_check
    ch = gen.Choices(None, json.loads(Path(path).read_text()))
    case = make(name, ch, max_numel(args))
    Path(path).write_text(json.dumps(ch.record))
    try:
        run(name, case)
    except Exception:  # noqa: BLE001  (a failure that is not a crash is not the one being shrunk)
        return 0
    return 0


def replay(args: argparse.Namespace) -> int:
    saved = json.loads(Path(args.replay).read_text())
    from .runner import attempt
    _, _, verdict = attempt(saved["check"], saved["record"], None, max_numel(args))
    print(verdict)
    from .check import Failure
    return 1 if isinstance(verdict, Failure) else 0


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.replay:
        saved = json.loads(Path(args.replay).read_text())
        args.device, args.threads, args.tiling = saved["device"], saved["threads"], saved["tiling"]
    os.environ.update(environment(args))
    if args.worker is None and args.crash_check is None and args.replay is None:
        return supervise(args, argv)
    setup(args)
    if args.replay:
        return replay(args)
    if args.crash_check:
        return crash_check(args)
    work(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
