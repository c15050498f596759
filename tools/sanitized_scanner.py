"""Build the compiled scanner (logscope/ingest/_collscan.c) once with ``-fsanitize=address,undefined`` and
run the byte pass's tests, the scanner's argument checks and its fuzz corpus against that build.

    python tools/sanitized_scanner.py            (.ci/run runs it; a few minutes on 2 cores)

A copy of the package goes to a temporary folder with the sanitized build in place of the installed
one, ahead of everything else on the path (``python -P``: not even the working folder comes first);
the tests run with AddressSanitizer's runtime preloaded into the interpreter (which was not built
with it) and stop at the first error of either sanitizer (``halt_on_error``, ``-fno-sanitize-recover``).
The first test checks that the scanner loaded is the sanitized one. Exit code: pytest's; 0 with a
note when there is no C compiler with the sanitizers here (the scanner is optional, so is this).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "logscope" / "ingest" / "_collscan.c"
TESTS = ["tests/test_scanner_api.py", "tests/test_scanner_fuzz.py", "tests/test_coll_prefilter.py",
         "tests/test_scanning.py", "tests/test_repeats.py",
         "tests/test_repeat_prefilter.py", "tests/test_progress_prefilter.py"]
FLAGS = ["-shared", "-fPIC", "-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all"]


def main() -> int:
    compiler = os.environ.get("CC", "gcc")
    if shutil.which(compiler) is None:
        print(f"sanitized scanner: no {compiler} here, not checked")
        return 0
    runtime = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True, text=True,
                             check=False).stdout.strip()
    if not runtime or not Path(runtime).exists():
        print(f"sanitized scanner: {compiler} has no AddressSanitizer runtime here, not checked")
        return 0
    with tempfile.TemporaryDirectory(prefix="logscope-sanitized-") as folder:
        package = Path(folder) / "logscope"
        shutil.copytree(ROOT / "logscope", package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        built = package / "ingest" / ("_collscan" + str(sysconfig.get_config_var("EXT_SUFFIX")))
        include = sysconfig.get_paths()["include"]
        subprocess.run([compiler, *FLAGS, f"-I{include}", str(SOURCE), "-o", str(built)], check=True)
        env = {**os.environ, "PYTHONPATH": folder, "LD_PRELOAD": runtime,
               "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=1",
               "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
               "LOGSCOPE_SANITIZED_SCANNER": str(built)}
        check = ("import os, logscope.ingest._collscan as c; "
                 "assert c.__file__ == os.environ['LOGSCOPE_SANITIZED_SCANNER'], c.__file__")
        subprocess.run([sys.executable, "-P", "-c", check], env=env, check=True, cwd=folder)
        done = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                               *TESTS], env=env, cwd=ROOT, check=False)
        return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
