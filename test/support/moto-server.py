"""
moto's server for the tests: `python3 -m moto.server`, with two costs of moto's own taken off each
request, and nothing else changed (the same application, backends and responses).

- moto finds a request's service by asking, under one lock, whether the host is the name of one of its
  modules: moto.backends.list_of_moto_modules lists moto's package folder and stats each of its ~180
  entries, at every request (a third of the server's CPU on the tests' requests, and every request of
  a test that runs four shards at once waits on that lock). The folder does not change while the
  server runs: it is listed once.
- werkzeug logs a line per request, which the tests drop: only its warnings and its "Running on" line
  (test/support/local-server.ts waits for it) are written.

If a moto release no longer has the function, its server runs as it is.
"""
import logging
import sys

import moto.backends as backends
from moto.server import main

if callable(getattr(backends, "list_of_moto_modules", None)):
    _modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: _modules

logging.getLogger("werkzeug").addFilter(lambda r: r.levelno >= logging.WARNING or "Running on" in r.getMessage())
main(sys.argv[1:])
