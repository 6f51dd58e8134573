"""The main demo: a fused reduction, the kernel it compiles to, and the numbers it produces."""
import numpy as np

import lazytensor as lt

x, y, z = (lt.asarray(np.random.rand(1 << 20).astype(np.float32)) for _ in range(3))
s = (x + y * z).sum()          # nothing has run yet
print(lt.schedule(s))          # the kernels that realize() would run: here exactly one
s.realize()                    # one fused kernel: reads x, y, z once, writes one float
print(s.item(), s.numpy())

a = lt.asarray(np.random.rand(4, 8).astype(np.float32))
p = a.softmax(axis=-1)         # max, exp, sum and divide: one kernel, each row's max and sum computed once
print(f"softmax: {len(lt.schedule(p))} kernel; rows sum to {p.sum(axis=-1).numpy()}")
print(lt.stats())
