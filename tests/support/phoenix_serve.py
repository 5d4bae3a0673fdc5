"""Runs `phoenix serve` (configured by the PHOENIX_* variables tests/support/phoenix.rs sets) for
as long as its standard input stays open.

Usage: python phoenix_serve.py WORKING_DIR

Phoenix itself never reads its input, so a test process that ends without dropping its
`Phoenix` (a server shared through a static, or a test killed outright) would leave it running:
this watches the input, which closes when the test process ends however it ends, and then
removes WORKING_DIR (the server's SQLite file) and exits.
"""

import os
import shutil
import sys
import threading


def watch(working_dir: str) -> None:
    # The raw descriptor, not sys.stdin: a thread blocked in the buffered reader's lock makes
    # the interpreter abort if it shuts down first (as when Phoenix fails to start).
    while os.read(0, 4096):
        pass
    shutil.rmtree(working_dir, ignore_errors=True)
    os._exit(0)


def main() -> None:
    threading.Thread(target=watch, args=(sys.argv[1],), daemon=True).start()
    from phoenix.server.main import main as phoenix

    sys.argv = ["phoenix", "serve"]
    phoenix()


if __name__ == "__main__":
    main()
