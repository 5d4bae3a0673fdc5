"""Serves a GGUF model with llama.cpp's HTTP server (xllamacpp) on 127.0.0.1, on a free port.

Prints the server's address on one line, then runs until stdin closes: a test process that
dies, even by SIGKILL, never leaves the server behind. Greedy sampling, so replies are
reproducible for a fixed build.
"""

import sys

import xllamacpp as x

params = x.CommonParams()
params.model.path = sys.argv[1]
params.n_ctx = 4096
params.n_predict = 256
params.n_parallel = 2
params.port = 0
params.hostnames = ["127.0.0.1"]
params.use_jinja = True
params.cpuparams.n_threads = 2
params.sampling.temp = 0.0
params.sampling.top_k = 1
server = x.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()
