"""A differential fuzzer for lazytensor: random programs of every op, dtype and shape, against torch.

- `gen.py` makes a program (inputs seen through views of realized buffers, a straight line of ops from
  `ops.py`, outputs, and a realization plan: values realized early, intermediates kept alive or dropped,
  outputs realized together or in pieces) from a recorded stream of draws, so that it can be shrunk;
- `reference.py` computes every value exactly with a bound on any correct implementation's error, which
  lazytensor's results (and torch's, as a check of the bounds) must meet;
- `check.py` runs a program on lazytensor against the reference, its gradients against torch autograd,
  and `lt.jit` replays against plain calls; `errors.py` feeds bad calls;
- `runner.py` shrinks a failure and writes its standalone repro; `test_fuzz.py` is the bounded run in the
  suite, `python -m tests.fuzz` (`__main__.py`) the long one.

Nothing here imports lazytensor at package import: the long run sets LT_DEVICE, TRITON_INTERPRET and
LT_NUM_THREADS first.
"""
