//! The local all-MiniLM-L6-v2 embedder on the real model files.
#![cfg(feature = "minilm")]

use std::{path::PathBuf, time::Duration};

use kgmesh_models::{cosine, minilm::MiniLm, EmbedError, Embedder};

fn model_dir() -> PathBuf {
    std::env::var_os(kgmesh_models::minilm::DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(kgmesh_models::minilm::DEFAULT_DIR)
        })
}

async fn load() -> MiniLm {
    let dir = model_dir();
    match tokio::time::timeout(Duration::from_secs(120), MiniLm::load_async(dir.clone())).await {
        Ok(Ok(model)) => model,
        Ok(Err(error)) => panic!(
            "cannot load all-MiniLM-L6-v2 from {}: {error}\n\
             Fetch it with: scripts/fetch-minilm   (or scripts/setup.d/30-minilm.sh)",
            dir.display()
        ),
        Err(_) => panic!("loading the model took over 120 s"),
    }
}

async fn embed(model: &MiniLm, texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    tokio::time::timeout(Duration::from_secs(120), model.embed(&texts))
        .await
        .expect("embedding took over 120 s")
        .expect("embedding failed")
}

#[tokio::test]
async fn similar_sentences_are_closer_than_unrelated_ones() {
    let model = load().await;
    assert_eq!(model.dim(), 384);
    let v = embed(
        &model,
        &[
            "Who directed the movie Inception?",
            "Which director made the film Inception?",
            "What is the boiling point of water at sea level?",
            "directed by",
            "release year",
            "the director of a film",
        ],
    )
    .await;
    assert_eq!(v.len(), 6);
    for vector in &v {
        assert_eq!(vector.len(), 384);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not normalized: {norm}");
    }
    let paraphrase = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(paraphrase > 0.8, "paraphrases only {paraphrase}");
    assert!(unrelated < 0.3, "unrelated at {unrelated}");
    // A relation name is closer to a question that uses it than another relation is.
    assert!(cosine(&v[5], &v[3]) > cosine(&v[5], &v[4]));
}

#[tokio::test]
async fn a_sentence_vector_does_not_depend_on_its_batch() {
    let model = load().await;
    let alone = embed(&model, &["Tom Hanks starred in Big."]).await;
    let long = "a much longer sentence that forces plenty of padding onto the short one ".repeat(5);
    let together = embed(&model, &["x", "Tom Hanks starred in Big.", &long]).await;
    assert_eq!(alone[0], together[1], "the batch changed the vector");
    // Enough texts to be shared out among threads (on a machine with more than one
    // core): each keeps the vector it has alone.
    let many: Vec<String> = (0..70)
        .map(|i| format!("question number {i} about films"))
        .collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let batched = embed(&model, &refs).await;
    for index in [0, 31, 32, 40, 69] {
        let single = embed(&model, &[refs[index]]).await;
        assert_eq!(
            single[0], batched[index],
            "text {index} changed in a batch of 70"
        );
    }
    assert!(embed(&model, &[]).await.is_empty());
    // Empty and very long inputs are embedded, not refused.
    let edge = embed(&model, &["", &"word ".repeat(2000)]).await;
    assert_eq!(edge.len(), 2);
}

/// The encoder against candle's BERT over the same files: the same vectors to float
/// rounding, for a lone word piece, questions, a sentence past 100 word pieces, text
/// the vocabulary splits into pieces, an empty text and one cut at 256 word pieces.
#[tokio::test]
async fn the_encoder_agrees_with_candles_bert() {
    let model = load().await;
    let dir = model_dir();
    let reference = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || {
            kgmesh_models::minilm::reference::CandleMiniLm::load(dir)
        }),
    )
    .await
    .expect("loading the reference took over 120 s")
    .expect("loading task")
    .expect("reference loads");
    let texts: Vec<String> = [
        "x",
        "who directed Heat",
        "the films that share actors with the film are directed by who",
        &"the quarterly report lists revenue, costs and the outlook for next year; ".repeat(10),
        "Zürich's Ångström-Straße 12b — naïve façade, 1994",
        "",
        &"word ".repeat(2000),
    ]
    .iter()
    .map(|t| t.to_string())
    .collect();
    let ours = embed(
        &model,
        &texts.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let theirs = reference.embed_blocking(&texts).expect("reference embeds");
    for ((text, a), b) in texts.iter().zip(&ours).zip(&theirs) {
        let largest = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(
            largest < 2e-5,
            "{:?}: components differ by up to {largest}",
            text.chars().take(40).collect::<String>()
        );
    }
}

#[test]
fn a_missing_folder_names_the_fetch_script() {
    let error = MiniLm::load("/nonexistent/minilm")
        .err()
        .expect("must fail");
    match error {
        EmbedError::Load { detail, .. } => {
            assert!(detail.contains("scripts/fetch-minilm"), "{detail}")
        }
        other => panic!("expected Load, got {other:?}"),
    }
}
