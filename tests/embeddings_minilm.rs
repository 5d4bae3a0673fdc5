//! `OpenAiEmbeddings` against a real sentence-embedding model: all-MiniLM-L6-v2 served on
//! loopback in OpenAI's shape (`tests/support/minilm_server.py`, installed into the test cache on
//! first use). Its vectors are the model's own, so closeness here is closeness of meaning, as a
//! store's semantic search will see it.

#[path = "support/model_servers.rs"]
mod model_servers;

use base64::Engine;
use graphwright::model::{Embeddings, ModelError, OpenAiEmbeddings};
use model_servers::minilm::MiniLm;

fn minilm() -> OpenAiEmbeddings {
    // A key of its own, so that a developer's OPENAI_API_KEY is never sent along.
    OpenAiEmbeddings::new(MiniLm::MODEL).base_url(MiniLm::shared().openai_base()).api_key("sk-local")
}

fn texts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|&t| t.to_owned()).collect()
}

/// Posts `body` to the server's `/v1/embeddings` as it is: the status and the reply's JSON.
async fn post(body: serde_json::Value) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/embeddings", MiniLm::shared().openai_base()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, serde_json::from_str(&response.text().await.unwrap()).unwrap())
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn assert_unit(vector: &[f32]) {
    assert_eq!(vector.len(), MiniLm::DIMENSIONS);
    let norm = dot(vector, vector).sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
}

/// sentence-transformers' quickstart prints these similarities for these sentences under this
/// model (1.0000/0.6660/0.1046, 0.1411): matching them to three decimals means tokenizer,
/// encoder, pooling and normalisation all agree with the reference implementation.
#[tokio::test]
async fn the_similarities_sentence_transformers_publishes_are_reproduced() {
    let sentences = texts(&["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]);
    let vectors = minilm().embed(&sentences).await.unwrap();
    for vector in &vectors {
        assert_unit(vector);
    }
    for (i, j, published) in [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)] {
        let similarity = dot(&vectors[i], &vectors[j]);
        assert!(
            (similarity - published).abs() < 1e-3,
            "similarity of {i} and {j}: {similarity}, published {published}"
        );
    }
}

/// Memories ranked for queries that share few of their words: the one that answers each query
/// comes first, well ahead of the rest (a window seat beats the cat on the windowsill).
#[tokio::test]
async fn memories_rank_by_meaning() {
    let memories = texts(&[
        "The user's cat is called Miso and sleeps on the windowsill.",
        "The user is allergic to peanuts.",
        "The user prefers a window seat when flying.",
        "The user's favourite programming language is Rust.",
        "The user lives in Lisbon and works from home.",
    ]);
    let embed = minilm();
    let stored = embed.embed(&memories).await.unwrap();
    for (query, answer) in [
        ("What pets does the user have?", 0),
        ("Does the user have any food allergies?", 1),
        ("Which seat should I book on the plane?", 2),
    ] {
        let asked = embed.embed_query(query).await.unwrap();
        let mut ranked: Vec<(f32, usize)> = stored.iter().enumerate().map(|(i, m)| (dot(&asked, m), i)).collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        assert_eq!(ranked[0].1, answer, "{query:?} ranked {ranked:?}");
        assert!(ranked[0].0 - ranked[1].0 > 0.15, "{query:?}: the answer leads by little: {ranked:?}");
    }

    let pair = embed
        .embed(&texts(&["The cat sits on the mat", "A kitten rests on a rug", "Stock markets fell sharply"]))
        .await
        .unwrap();
    let (related, unrelated) = (dot(&pair[0], &pair[1]), dot(&pair[0], &pair[2]));
    assert!(related > 0.5 && unrelated < 0.2, "related {related}, unrelated {unrelated}");
}

/// A text's vector does not depend on the texts it is sent with: padding to a batch's longest
/// text is masked out. A hundred texts of many lengths (the server runs them 32 at a time),
/// one request and then one at a time.
#[tokio::test]
async fn a_batch_gives_the_vectors_one_text_at_a_time_does() {
    let all: Vec<String> = (0..100)
        .map(|i| format!("Note {i}: {}", "the meeting moved to Thursday afternoon ".repeat(1 + i % 7)))
        .collect();
    let embed = minilm();
    let batched = embed.embed(&all).await.unwrap();
    assert_eq!(batched.len(), all.len());
    for (text, vector) in all.iter().zip(&batched).step_by(9) {
        assert_unit(vector);
        let alone = embed.embed_query(text).await.unwrap();
        let apart = vector.iter().zip(&alone).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(apart < 1e-5, "{text:?} differs by {apart} in a batch");
    }
    // Texts longer than the model's 256 tokens are cut, as sentence-transformers cuts them.
    let long = "word ".repeat(400);
    assert_unit(&embed.embed_query(&long).await.unwrap());
}

/// What the server cannot do is a 400 in OpenAI's error shape, which the client reads as a
/// rejected request: shorter vectors (this model has one length), and no texts at all.
#[tokio::test]
async fn what_the_model_cannot_do_is_a_rejected_request() {
    let error = minilm().dimensions(256).embed(&texts(&["hello"])).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::BadRequest { status: 400, message, .. } if message.contains("384-dimensional")),
        "{error:?}"
    );

    let (status, body) = post(serde_json::json!({"model": MiniLm::MODEL, "input": []})).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "input");
}

/// The reply's shape beyond the vectors: the model named, tokens counted (with the [CLS] and
/// [SEP] each text gets), and vectors in base64 when asked, as OpenAI's SDKs ask.
#[tokio::test]
async fn replies_are_in_openai_shape() {
    let ask =
        |format: &str| post(serde_json::json!({"model": "minilm", "input": "hello world", "encoding_format": format}));
    let (status, floats) = ask("float").await;
    assert_eq!(status, 200);
    assert_eq!(floats["object"], "list");
    assert_eq!(floats["model"], "minilm");
    assert_eq!(floats["usage"], serde_json::json!({"prompt_tokens": 4, "total_tokens": 4}));
    assert_eq!(floats["data"][0]["object"], "embedding");
    assert_eq!(floats["data"][0]["index"], 0);
    let floats: Vec<f32> = serde_json::from_value(floats["data"][0]["embedding"].clone()).unwrap();

    let (_, packed) = ask("base64").await;
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(packed["data"][0]["embedding"].as_str().unwrap()).unwrap();
    let unpacked: Vec<f32> = bytes.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    assert_eq!(unpacked, floats);
}
