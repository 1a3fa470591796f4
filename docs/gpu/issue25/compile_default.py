"""Compile the bench's models in the default compile, binary route, all at once."""
import concurrent.futures
import sys
import time
from pathlib import Path

from aoti_shim.smoke.compile import CompileRequest, compile_cached

cache = Path(sys.argv[1])
models = [f"aoti_shim.smoke.zoo:{m}" for m in sys.argv[2:]]
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(len(models)) as pool:
    for m, art in zip(models, pool.map(lambda m: compile_cached(CompileRequest(m, "cuda", "binary", compile="default"), cache), models)):
        print(f"compiled {m}: {art.directory.name} ({time.time() - t0:.0f} s)", flush=True)
