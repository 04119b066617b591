//! The text-retriever role: a retriever answering `retrieve` with passages of the
//! indexed documents and facts of their KG skeleton, each citing its file and byte
//! offset. The index is read on the first request (and its skeleton names embedded
//! when the process has the embedder the index was built with); an index that cannot be
//! read fails every request with the reason, never an empty reply passed off as "no
//! passages".

use std::{sync::Arc, time::Instant};

use kgmesh_models::Embedder;
use kgmesh_schemas::{
    messages::{
        context::{Evidence, EvidenceItem, Excerpt},
        retrieve::RetrieveReply,
    },
    AgentError, Role,
};
use kgmesh_stores::text::TextIndex;
use tokio::sync::OnceCell;

use super::{
    retrieve::{Hit, SearchSettings, TextSearcher, Via},
    TextSource,
};
use crate::runtime::{
    retriever_spec, AgentDeps, RetrieveCall, Retriever, RoleBuildError, RoleSpec,
};

/// A searcher ready to use, and whether questions are embedded for it.
pub struct LoadedText {
    pub searcher: TextSearcher,
    /// The embedder to use for questions: the index's own, when this process has it.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Said in every reply's notes when the index's vectors cannot be used.
    pub note: Option<String>,
}

/// Opens the index in `dir` and prepares it for search with `embedder`.
pub async fn load_text(
    dir: &std::path::Path,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<LoadedText, String> {
    let owned = dir.to_owned();
    let index = tokio::task::spawn_blocking(move || TextIndex::open_in(&owned))
        .await
        .map_err(|e| format!("the text index reader panicked: {e}"))?
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "{} holds no text index; build one with `kgmesh index --text FILES --into embedded:{}`",
                dir.display(),
                dir.display()
            )
        })?;
    let (embedder, note) = match (&index.embedder, embedder) {
        (Some(built), Some(have)) if have.name() == built && have.dim() == index.dim as usize => {
            (Some(have), None)
        }
        (Some(built), have) => (
            None,
            Some(format!(
                "the text index was built with the embedder {built}, this process has {}: lexical search only",
                have.map(|e| e.name().to_owned()).unwrap_or_else(|| "none".to_owned())
            )),
        ),
        (None, _) => (None, None),
    };
    let mut searcher = TextSearcher::new(index);
    if let Some(embedder) = &embedder {
        let names = searcher.entity_names().to_vec();
        if !names.is_empty() {
            let vectors = embedder
                .embed(&names)
                .await
                .map_err(|e| format!("cannot embed the skeleton's names: {e}"))?;
            searcher.set_entity_vectors(vectors);
        }
    }
    Ok(LoadedText {
        searcher,
        embedder,
        note,
    })
}

/// The evidence for `hits`, each citing its file and offset.
pub fn excerpts(searcher: &TextSearcher, hits: &[Hit]) -> Vec<Evidence> {
    let index = searcher.index();
    let cite = |passage: u32| {
        let p = &index.passages[passage as usize];
        let file = &index.files[index.chunks[p.chunk as usize].file as usize];
        (file.path.clone(), p.offset, p.len)
    };
    hits.iter()
        .map(|hit| {
            let (excerpt, score) = match *hit {
                Hit::Passage {
                    passage,
                    score,
                    via,
                } => {
                    let (file, offset, len) = cite(passage);
                    (
                        Excerpt {
                            id: format!("p{passage}"),
                            file,
                            offset,
                            len,
                            text: index.passages[passage as usize].text.clone(),
                            channel: match via {
                                Via::Keyword => "keyword",
                                Via::Skeleton => "skeleton",
                            }
                            .to_owned(),
                        },
                        score,
                    )
                }
                Hit::Fact { fact, score } => {
                    let triple = &index.skeleton[fact as usize];
                    let (file, offset, len) = cite(triple.passages[0]);
                    (
                        Excerpt {
                            id: format!("f{fact}"),
                            file,
                            offset,
                            len,
                            text: format!(
                                "{} | {} | {}",
                                triple.head, triple.relation, triple.tail
                            ),
                            channel: "skeleton".to_owned(),
                        },
                        score,
                    )
                }
            };
            Evidence {
                source: Role::TEXT_RETRIEVER.to_owned(),
                score,
                item: EvidenceItem::Excerpt(excerpt),
            }
        })
        .collect()
}

struct TextRetriever {
    dir: std::path::PathBuf,
    settings: SearchSettings,
    embedder: Option<Arc<dyn Embedder>>,
    loaded: OnceCell<Result<Arc<LoadedText>, String>>,
}

#[async_trait::async_trait]
impl Retriever for TextRetriever {
    const ROLE: &'static str = Role::TEXT_RETRIEVER;

    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError> {
        let loaded = self
            .loaded
            .get_or_init(|| async {
                load_text(&self.dir, self.embedder.clone())
                    .await
                    .map(Arc::new)
            })
            .await
            .clone()
            .map_err(|detail| AgentError::Unavailable {
                detail: format!("text retriever: {detail}"),
            })?;
        let started = Instant::now();
        let vector = match &loaded.embedder {
            Some(embedder) => Some(
                embedder
                    .embed(std::slice::from_ref(&call.request.question))
                    .await
                    .map_err(|e| AgentError::Unavailable {
                        detail: format!("text retriever: cannot embed the question: {e}"),
                    })?
                    .remove(0),
            ),
            None => None,
        };
        let hits =
            loaded
                .searcher
                .search(&call.request.question, vector.as_deref(), &self.settings);
        let mut evidence = excerpts(&loaded.searcher, &hits);
        evidence.truncate(call.max_evidence());
        call.ctx
            .record_graph(evidence.len() as u64, started.elapsed());
        Ok(RetrieveReply {
            evidence,
            repair_hints: Vec::new(),
            notes: loaded.note.iter().cloned().collect(),
        })
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]): started where a text index
/// is configured (`text.index`).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let Some(text) = deps.get::<TextSource>().cloned() else {
        return Err(RoleBuildError::missing(
            Role::TEXT_RETRIEVER,
            "a text index (text.index)",
        ));
    };
    let retriever = Arc::new(TextRetriever {
        dir: text.dir,
        settings: text.search,
        embedder: deps.embedder.clone(),
        loaded: OnceCell::new(),
    });
    Ok(retriever_spec(retriever))
}
