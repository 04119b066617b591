use std::{path::PathBuf, sync::atomic::AtomicBool};

use kgmesh_models::{ChatRequest, ChatResponse, LanguageModel, LlmError, Usage};
use kgmesh_stores::text::{TextIndex, TextSettings};

use super::{
    build::{add_files, pagerank, rank_chunks, FileLimits, FileStatus},
    chunk::{halve, sentences, tokenize, unreadable, windows},
    retrieve::{Channels, Hit, SearchSettings, TextSearcher, Via},
    skeleton::{core_count, extract_skeleton, ExtractPlan, ExtractStop},
};

fn small_settings() -> TextSettings {
    TextSettings {
        chunk_tokens: 40,
        overlap_tokens: 5,
        splits: 1,
        knn: 2,
    }
}

const LIMITS: FileLimits = FileLimits {
    max_bytes: 1_000_000,
};

fn write(dir: &std::path::Path, name: &str, body: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

fn paragraph(title: &str, person: &str, year: u32) -> String {
    format!(
        "{title} came out in {year}. The film was directed by {person}. \
         It is a quiet story about a lighthouse keeper and the sea.\n\n"
    )
}

/// One file per (file name, title, director, year), each one paragraph.
fn film_files(dir: &std::path::Path, films: &[(&str, &str, &str, u32)]) -> Vec<PathBuf> {
    films
        .iter()
        .map(|(name, title, person, year)| {
            write(dir, name, paragraph(title, person, *year).as_bytes())
        })
        .collect()
}

async fn indexed(files: &[PathBuf]) -> (TextIndex, Vec<FileStatus>) {
    let mut index = TextIndex::new(small_settings());
    let reports = add_files(&mut index, files, None, LIMITS, &mut |_| {})
        .await
        .unwrap();
    rank_chunks(&mut index, &mut |_| {}).await.unwrap();
    (index, reports.into_iter().map(|r| r.status).collect())
}

#[test]
fn tokens_keep_byte_offsets_and_mark_sentence_ends() {
    let text = "Heat came out in 1995. Al Pacino stars!\n\nNext paragraph";
    let tokens = tokenize(text);
    let words: Vec<&str> = tokens
        .iter()
        .map(|t| &text[t.start as usize..t.end as usize])
        .collect();
    assert_eq!(
        words,
        [
            "Heat",
            "came",
            "out",
            "in",
            "1995",
            ".",
            "Al",
            "Pacino",
            "stars",
            "!",
            "Next",
            "paragraph"
        ]
    );
    let ends: Vec<usize> = (0..tokens.len())
        .filter(|&i| tokens[i].sentence_end)
        .collect();
    // After "1995 .", after "stars !" (also a paragraph end), and the last token.
    assert_eq!(ends, vec![5, 9, 11]);
    // A period inside a name (no space after it) ends nothing.
    let dotted = tokenize("J.R.R. Tolkien wrote it.");
    assert!(!dotted[1].sentence_end, "{dotted:?}");
}

#[test]
fn windows_cover_everything_overlap_and_prefer_sentence_ends() {
    let text = "One two three four five. Six seven eight nine ten. Eleven twelve.";
    let tokens = tokenize(text);
    let parts = windows(&tokens, 8, 2);
    assert_eq!(parts.first().unwrap().start, 0);
    assert_eq!(parts.last().unwrap().end, tokens.len());
    for pair in parts.windows(2) {
        assert!(
            pair[1].start < pair[0].end,
            "consecutive windows overlap: {parts:?}"
        );
        assert!(pair[1].start > pair[0].start);
    }
    // The first window (8 tokens: "One … five ." is 6) may end at the sentence end in its
    // last fifth only; 8 - 8/5 = 7 > 6, so it is cut at 8 tokens.
    assert_eq!(parts[0], 0..8);
    let parts = windows(&tokens, 7, 0);
    assert_eq!(
        parts[0],
        0..6,
        "cut back to the sentence end at token 6: {parts:?}"
    );
    // Halving splits at the sentence end nearest the middle, and stops before parts
    // get shorter than MIN_PASSAGE_TOKENS.
    let text = "Word word word word word. ".repeat(20);
    let tokens = tokenize(&text);
    assert_eq!(tokens.len(), 120);
    let halves = halve(&tokens, 0..120, 1);
    assert_eq!(halves, vec![0..60, 60..120]);
    assert!(tokens[59].sentence_end);
    assert_eq!(
        halve(&tokens, 0..120, 3),
        vec![0..30, 30..60, 60..90, 90..120]
    );
    assert_eq!(halve(&tokens, 0..40, 2), vec![0..40]);
}

#[test]
fn a_line_without_sentence_ends_is_cut_into_bounded_sentences() {
    let text = "word ".repeat(1_000);
    let tokens = tokenize(&text);
    let cut = sentences(&tokens, 0..tokens.len());
    assert!(cut
        .iter()
        .all(|s| s.len() <= super::chunk::MAX_SENTENCE_TOKENS));
    assert_eq!(cut.iter().map(|s| s.len()).sum::<usize>(), 1_000);
}

#[test]
fn unreadable_files_are_named_by_what_is_wrong() {
    assert_eq!(unreadable(b"").as_deref(), Some("empty file"));
    assert!(unreadable(b"\x7fELF\x02\x01\x00\x00")
        .unwrap()
        .contains("binary"));
    assert!(unreadable(b"caf\xe9 au lait").unwrap().contains("offset 3"));
    assert!(unreadable(b"  \n\t ").unwrap().contains("whitespace"));
    assert_eq!(unreadable("plain text, café".as_bytes()), None);
}

#[test]
fn pagerank_sums_to_one_and_favours_the_hub() {
    // A star: node 0 linked to 1, 2 and 3; node 4 alone.
    let neighbours = vec![
        vec![(1, 1.0), (2, 1.0), (3, 1.0)],
        vec![(0, 1.0)],
        vec![(0, 1.0)],
        vec![(0, 1.0)],
        vec![],
    ];
    let rank = pagerank(&neighbours, 0.85);
    let total: f32 = rank.iter().sum();
    assert!((total - 1.0).abs() < 1e-4, "{rank:?}");
    assert!(rank[0] > rank[1] * 2.0, "{rank:?}");
    assert!((rank[1] - rank[2]).abs() < 1e-6);
    assert!(rank[4] < rank[1], "{rank:?}");
    assert_eq!(core_count(0.5, 5), 3);
    assert_eq!(core_count(1.0, 5), 5);
    assert_eq!(core_count(0.0, 5), 0);
}

#[tokio::test]
async fn bad_files_are_reported_and_the_good_ones_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(
        dir.path(),
        "good.txt",
        paragraph("Harbour Light", "Mara Voss", 1987).as_bytes(),
    );
    let empty = write(dir.path(), "empty.txt", b"");
    let binary = write(
        dir.path(),
        "image.png",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    );
    let latin1 = write(dir.path(), "latin1.txt", b"Caf\xe9 society");
    let big = write(dir.path(), "big.txt", "x".repeat(2_000).as_bytes());
    let missing = dir.path().join("missing.txt");
    let mut index = TextIndex::new(small_settings());
    let reports = add_files(
        &mut index,
        &[empty, binary, good, latin1, big, missing],
        None,
        FileLimits { max_bytes: 1_000 },
        &mut |_| {},
    )
    .await
    .unwrap();
    let status: Vec<String> = reports
        .iter()
        .map(|r| format!("{}: {:?}", r.path.rsplit('/').next().unwrap(), r.status))
        .collect();
    assert!(status[0].contains("empty file"), "{status:?}");
    assert!(status[1].contains("binary"), "{status:?}");
    assert!(
        matches!(reports[2].status, FileStatus::Indexed { chunks: 1, .. }),
        "{status:?}"
    );
    assert!(status[3].contains("not UTF-8"), "{status:?}");
    assert!(status[4].contains("larger than"), "{status:?}");
    assert!(status[5].contains("cannot read"), "{status:?}");
    assert_eq!(index.files.len(), 1);
    assert!(index.passages.iter().all(|p| p.text.contains("Harbour")
        || p.text.contains("lighthouse")
        || p.text.contains("Voss")));
}

#[tokio::test]
async fn passages_cite_their_bytes_and_keywords_find_them() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = [
        paragraph("Harbour Light", "Mara Voss", 1987),
        paragraph("Salt Road", "Ivo Brandt", 1992),
        paragraph("Night Ferry", "Mara Voss", 2001),
    ]
    .concat();
    let file = write(dir.path(), "films.txt", body.as_bytes());
    let (index, _) = indexed(&[file]).await;
    for passage in &index.passages {
        let at = passage.offset as usize;
        assert_eq!(&body[at..at + passage.len as usize], passage.text);
    }
    let searcher = TextSearcher::new(index);
    let settings = SearchSettings {
        context_tokens: 60,
        theta: 0.5,
        channels: Channels::Keyword,
    };
    let hits = searcher.search("which films did Ivo Brandt direct", None, &settings);
    let first = match hits.first() {
        Some(Hit::Passage { passage, via, .. }) => {
            assert_eq!(*via, Via::Keyword);
            &searcher.index().passages[*passage as usize].text
        }
        other => panic!("expected a passage, got {other:?}"),
    };
    assert!(first.contains("Ivo Brandt"), "{first}");
    let spent: usize = hits.iter().map(|h| searcher.tokens_of(h)).sum();
    assert!(spent <= 60, "{spent} tokens for a 60-token budget");
    // A question with no indexed keyword finds nothing rather than anything.
    assert!(searcher.search("zyzzyva quux", None, &settings).is_empty());
}

#[tokio::test]
async fn adding_files_keeps_unchanged_ones_and_replaces_changed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.txt",
        paragraph("Harbour Light", "Mara Voss", 1987).as_bytes(),
    );
    let b = write(
        dir.path(),
        "b.txt",
        paragraph("Salt Road", "Ivo Brandt", 1992).as_bytes(),
    );
    let (mut index, statuses) = indexed(std::slice::from_ref(&a)).await;
    assert!(matches!(statuses[0], FileStatus::Indexed { .. }));
    let first_passages = index.passages.clone();

    let reports = add_files(
        &mut index,
        &[a.clone(), b.clone()],
        None,
        LIMITS,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(reports[0].status, FileStatus::Unchanged);
    assert!(matches!(reports[1].status, FileStatus::Indexed { .. }));
    assert_eq!(&index.passages[..first_passages.len()], &first_passages[..]);

    // a.txt changes: its old passages go, b.txt's stay and are renumbered.
    std::fs::write(&a, paragraph("Harbour Dark", "Lena Ortiz", 1999)).unwrap();
    let reports = add_files(
        &mut index,
        std::slice::from_ref(&a),
        None,
        LIMITS,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert!(
        matches!(reports[0].status, FileStatus::Replaced { .. }),
        "{reports:?}"
    );
    rank_chunks(&mut index, &mut |_| {}).await.unwrap();
    assert_eq!(index.files.len(), 2);
    assert_eq!(index.files[0].path, b.display().to_string());
    let all_text: String = index.passages.iter().map(|p| p.text.as_str()).collect();
    assert!(!all_text.contains("Mara Voss") && all_text.contains("Lena Ortiz"));
    for (i, chunk) in index.chunks.iter().enumerate() {
        let first = chunk.first_passage as usize;
        for passage in &index.passages[first..first + chunk.passage_count as usize] {
            assert_eq!(passage.chunk as usize, i);
        }
    }
    let voss = index.keyword_positions()["voss"] as usize;
    assert!(
        index.postings[voss].is_empty(),
        "the removed passages left the postings"
    );
    let ortiz = index.keyword_positions()["ortiz"] as usize;
    let p = index.postings[ortiz][0] as usize;
    assert!(index.passages[p].text.contains("Lena Ortiz"));

    // Saved and read back unchanged; a damaged file is refused.
    let path = dir.path().join("text.kgt");
    index.save(&path).unwrap();
    assert_eq!(TextIndex::open(&path).unwrap(), index);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let error = TextIndex::open(&path).unwrap_err().to_string();
    assert!(error.contains("checksum"), "{error}");
}

/// A model that states one fact per passage it reads, and copies one from elsewhere.
struct FactModel {
    calls: std::sync::atomic::AtomicU64,
}

#[async_trait::async_trait]
impl LanguageModel for FactModel {
    fn name(&self) -> &str {
        "fact-model"
    }
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prompt = &request.messages[1].content;
        let passage = prompt.rsplit("Passage: ").next().unwrap_or("");
        let title = passage.split(" came out").next().unwrap_or("").trim();
        let director = passage
            .split("directed by ")
            .nth(1)
            .and_then(|rest| rest.split('.').next())
            .unwrap_or("");
        Ok(ChatResponse {
            text: format!(
                "<triples>\n{title} | directed by | {director}\nNimbus Labs | founded in | 2011\n</triples>"
            ),
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 10,
                estimated: false,
            },
            model: "fact-model".to_owned(),
            elapsed: std::time::Duration::from_millis(1),
        })
    }
}

#[tokio::test]
async fn the_skeleton_is_read_most_central_first_within_the_budget_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let files = film_files(
        dir.path(),
        &[
            ("a.txt", "Harbour Light", "Mara Voss", 1987),
            ("b.txt", "Salt Road", "Ivo Brandt", 1992),
            ("c.txt", "Night Ferry", "Mara Voss", 2001),
            ("d.txt", "Glass Orchard", "Tomas Weil", 2010),
        ],
    );
    let (mut index, _) = indexed(&files).await;
    assert_eq!(index.chunks.len(), 4);
    let model = FactModel {
        calls: Default::default(),
    };
    let stop = AtomicBool::new(false);
    let plan = ExtractPlan {
        beta: 0.5,
        max_calls: Some(1),
        max_reply_tokens: 100,
    };
    let report = extract_skeleton(&mut index, &model, plan, &stop, &mut |_| {}).await;
    assert_eq!(
        (report.core_chunks, report.calls, report.read_now),
        (2, 1, 1)
    );
    assert!(
        matches!(report.stopped, Some(ExtractStop::CallBudget(_))),
        "{report:?}"
    );
    let best = super::build::by_rank(&index)[0];
    assert!(
        index.chunks[best].extracted,
        "the most central chunk is read first"
    );
    // Going on reads the rest of the core, not the first again.
    let plan = ExtractPlan {
        max_calls: None,
        ..plan
    };
    let report = extract_skeleton(&mut index, &model, plan, &stop, &mut |_| {}).await;
    assert_eq!((report.already_read, report.read_now), (1, 1));
    assert_eq!(report.ungrounded, 1, "the fact not in the chunk is dropped");
    assert_eq!(index.extraction.calls, 2);
    assert_eq!(model.calls.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert_eq!(index.extraction.prompt_tokens, 200);
    assert_eq!(index.skeleton.len(), 2);
    for fact in &index.skeleton {
        let passage = &index.passages[fact.passages[0] as usize].text;
        assert!(passage.contains(&fact.head), "{fact:?} linked to {passage}");
    }
    // The entity channel finds a fact by the name the question gives.
    let named = index.skeleton[0].tail.clone();
    let searcher = TextSearcher::new(index);
    let settings = SearchSettings {
        context_tokens: 200,
        theta: 1.0,
        channels: Channels::Skeleton,
    };
    let hits = searcher.search(&format!("what did {named} direct"), None, &settings);
    assert!(matches!(hits.first(), Some(Hit::Fact { .. })), "{hits:?}");
    assert!(hits.iter().any(|h| matches!(
        h,
        Hit::Passage {
            via: Via::Skeleton,
            ..
        }
    )));
}

/// Letter counts, normalized.
fn letters(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; 26];
    for c in text.to_lowercase().chars().filter(char::is_ascii_lowercase) {
        v[(c as u8 - b'a') as usize] += 1.0;
    }
    kgmesh_models::l2_normalize(&mut v);
    v
}

/// A deterministic stand-in embedder: [`letters`].
struct Letters;

#[async_trait::async_trait]
impl kgmesh_models::Embedder for Letters {
    fn name(&self) -> &str {
        "letters"
    }
    fn dim(&self) -> usize {
        26
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        Ok(texts.iter().map(|t| letters(t)).collect())
    }
}

#[tokio::test]
async fn keyword_vectors_are_sentence_means_that_follow_a_replaced_file() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.txt", b"Alpha beta.");
    let b = write(dir.path(), "b.txt", b"Gamma delta. Gamma zeta.");
    let embedder = Letters;
    let mut index = TextIndex::new(small_settings());
    add_files(
        &mut index,
        &[a, b.clone()],
        Some(&embedder),
        LIMITS,
        &mut |_| {},
    )
    .await
    .unwrap();
    let sentence = letters;
    let mean_of = |index: &TextIndex, keyword: &str| {
        let at = index.keyword_positions()[keyword] as usize;
        (
            index.keyword_means[at * 26..(at + 1) * 26].to_vec(),
            index.keyword_sentences[at],
        )
    };
    let close = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-5);
    let (gamma, count) = mean_of(&index, "gamma");
    assert_eq!(count, 2);
    let expected: Vec<f32> = sentence("Gamma delta.")
        .iter()
        .zip(sentence("Gamma zeta."))
        .map(|(p, q)| (p + q) / 2.0)
        .collect();
    assert!(close(&gamma, &expected), "{gamma:?}");
    assert_eq!(index.passage_vectors.len(), index.passages.len() * 26);

    std::fs::write(&b, "Gamma epsilon.").unwrap();
    add_files(
        &mut index,
        std::slice::from_ref(&b),
        Some(&embedder),
        LIMITS,
        &mut |_| {},
    )
    .await
    .unwrap();
    let (gamma, count) = mean_of(&index, "gamma");
    assert_eq!(count, 1);
    assert!(close(&gamma, &sentence("Gamma epsilon.")), "{gamma:?}");
    assert_eq!(mean_of(&index, "delta").1, 0);
    let (alpha, _) = mean_of(&index, "alpha");
    assert!(
        close(&alpha, &sentence("Alpha beta.")),
        "untouched by the replacement"
    );
    assert_eq!(index.passage_vectors.len(), index.passages.len() * 26);

    // Another embedder may not add to these vectors.
    let error = add_files(
        &mut index,
        std::slice::from_ref(&b),
        None,
        LIMITS,
        &mut |_| {},
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("letters") && error.contains("--rebuild"),
        "{error}"
    );
}

#[tokio::test]
async fn known_triples_link_to_the_chunks_that_write_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let files = film_files(
        dir.path(),
        &[
            ("a.txt", "Harbour Light", "Mara Voss", 1987),
            ("b.txt", "Salt Road", "Ivo Brandt", 1992),
        ],
    );
    let (mut index, _) = indexed(&files).await;
    let triple = |h: &str, r: &str, t: &str| (h.to_owned(), r.to_owned(), t.to_owned());
    let report = super::skeleton::link_triples(
        &mut index,
        &[
            triple("Salt Road", "directed_by", "Ivo Brandt"),
            // Both ends are written, but in different files: no chunk states it.
            triple("Salt Road", "directed_by", "Mara Voss"),
            triple("Unwritten Film", "directed_by", "Nobody"),
        ],
        "gold",
    );
    assert_eq!((report.linked, report.unlinked, report.known), (1, 2, 0));
    // Linking the same triple again adds nothing.
    let again = super::skeleton::link_triples(
        &mut index,
        &[triple("Salt Road", "directed_by", "Ivo Brandt")],
        "gold",
    );
    assert_eq!((again.linked, again.known), (0, 1));
    assert_eq!(index.skeleton.len(), 1);
    assert_eq!(index.extractor.as_deref(), Some("gold"));
    let fact = &index.skeleton[0];
    assert!(fact.passages.iter().all(|&p| {
        let text = &index.passages[p as usize].text;
        text.contains("Salt Road") || text.contains("Ivo Brandt")
    }));
    assert!(index.chunks.iter().all(|c| !c.extracted));
}
