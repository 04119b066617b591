//! Relevance of texts (relation names, entity names, verbalized paths) to a question:
//! cosine similarity of sentence embeddings when an embedder is configured, lexical
//! matching otherwise. Embeddings of texts are cached, so a relation or a node is
//! embedded once however many triplets mention it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use kgmesh_models::{EmbedError, Embedder};

use kgmesh_schemas::{
    graph::{Direction, Metapath},
    messages::cache::RelationCue,
};

use super::text::{
    is_determiner, is_stop_word, LearnedCues, QuestionTerms, SequenceFit, AGAINST_TOKEN, CLAIM_MIN,
    CLASS_TOKEN, RELATION_TOKEN, RETURN_TOKEN, STRONG_CUE,
};

/// Embeddings of texts, computed once and kept up to `capacity` entries (then the cache
/// is cleared wholesale: cheap, and bounded memory matters more than hit rate here).
pub struct TextVectors {
    embedder: Arc<dyn Embedder>,
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
    capacity: usize,
}

impl TextVectors {
    pub fn new(embedder: Arc<dyn Embedder>, capacity: usize) -> Self {
        Self {
            embedder,
            cache: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// One vector per text, embedding only the texts not seen before (in one batch).
    pub async fn vectors(&self, texts: &[String]) -> Result<Vec<Arc<[f32]>>, EmbedError> {
        let missing: Vec<String> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = std::collections::HashSet::new();
            texts
                .iter()
                .filter(|t| !cache.contains_key(*t) && seen.insert(*t))
                .cloned()
                .collect()
        };
        let fresh = if missing.is_empty() {
            Vec::new()
        } else {
            let started = std::time::Instant::now();
            let fresh = self.embedder.embed(&missing).await?;
            tracing::debug!(
                asked = texts.len(),
                embedded = missing.len(),
                ms = started.elapsed().as_secs_f64() * 1e3,
                "texts not embedded before"
            );
            fresh
        };
        if fresh.len() != missing.len() {
            return Err(EmbedError::Compute(format!(
                "embedder returned {} vectors for {} texts",
                fresh.len(),
                missing.len()
            )));
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut local: HashMap<&str, Arc<[f32]>> = HashMap::new();
        for (text, vector) in missing.iter().zip(fresh) {
            let vector: Arc<[f32]> = vector.into();
            local.insert(text.as_str(), vector.clone());
            if cache.len() >= self.capacity {
                cache.clear();
            }
            cache.insert(text.clone(), vector);
        }
        texts
            .iter()
            .map(|t| {
                local
                    .get(t.as_str())
                    .cloned()
                    .or_else(|| cache.get(t).cloned())
                    .ok_or_else(|| EmbedError::Compute(format!("no vector for {t:?}")))
            })
            .collect()
    }
}

pub use kgmesh_models::cosine;

/// A question, ready to score texts against.
pub struct Relevance {
    question: Arc<str>,
    /// The question's words outside its entities' names.
    asking: Arc<str>,
    terms: QuestionTerms,
    embedded: Option<(Arc<TextVectors>, Arc<[f32]>)>,
    /// Word embeddings for relation-sequence scoring, and the cosine from which a
    /// question word names the graph relation nearest to it.
    words_opt: Option<(Arc<TextVectors>, f32)>,
    /// What past verified plans taught about this question's words.
    cues_opt: Option<CueTable>,
    /// The graph's relation names: the candidates a question word is matched against by
    /// embedding (else the relations of the sequences being scored).
    graph_relations: Option<Arc<[String]>>,
    /// Per relation, the stems of its name that the graph's names show call what has
    /// the relation ([`super::text::of_phrase`]).
    holder_words: Arc<HashMap<String, Vec<String>>>,
}

/// Learned word → relation-step confidences (the plan cache's lexicon), aligned with
/// the question's [`QuestionTerms`].
#[derive(Debug, Clone, Default)]
struct CueTable {
    /// Per question word: (relation, followed backwards) → confidence.
    per_word: Vec<HashMap<(String, bool), f32>>,
    /// Per question word: its most confident step.
    strength: Vec<f32>,
}

impl CueTable {
    /// `hop_word[h][i]`: the confidence of word `i` in hop `h` of `steps`. On the first
    /// hop, a word learned only with the relation walked the other way lends it
    /// [`REVERSED_CUE_SHARE`] of its confidence: the question starts from the other end
    /// of the relation ("which professor supervises X" where verified plans taught
    /// "which students does Y supervise").
    fn hop_word(&self, steps: &[(&str, bool)]) -> Vec<Vec<f32>> {
        steps
            .iter()
            .enumerate()
            .map(|(hop, &(relation, inverse))| {
                self.per_word
                    .iter()
                    .map(|per_step| {
                        let cue = |inverse: bool| per_step.get(&(relation.to_owned(), inverse));
                        match (cue(inverse), cue(!inverse)) {
                            (Some(&weight), _) => weight,
                            (None, Some(&weight)) if hop == 0 => weight * REVERSED_CUE_SHARE,
                            _ => 0.0,
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

/// What share of its confidence a word learned with a relation walked one way lends the
/// relation walked the other way from the question's entity ([`CueTable::hop_word`]).
/// At half, the hop claims the word (so a later hop cannot, as the round trip "to the
/// professor's other students" would) without counting as explaining it. 0.5 and 1.0
/// read the same on the zoo warmed with half of each domain (`scripts/zoo-warm`); at 1.0
/// PathQuestion dev lost 0.5–1.0 point warmed with 100 pairs.
const REVERSED_CUE_SHARE: f32 = 0.5;

/// Cosine of a question word's and a relation label's embeddings from which the word
/// may name that relation (when it is the nearest of the graph's relations, see
/// [`NEAREST_MARGIN`]). Chosen on the dev questions with MiniLM: at 0.35, "movies"
/// (0.52 to `starred_actors`) and "words" (0.46 to `in_language`) named relations and
/// MetaQA 1-hop lost 4 points; the synonyms found ("mom" 0.62 to `parents`, "sex" 0.56
/// to `gender`, "kid" 0.58 to `children`) are past 0.5.
pub const SYNONYM_COSINE: f32 = 0.5;

/// The cosine from which an opening wh-word that asks for a kind of answer ("*where*
/// is …", "*when* …") may name the relation nearest to it, when it stands out from
/// the others ([`DISTINCT_MIN`]) as any word must. A function word sits lower against
/// every label than a content word does (MiniLM: "where" is 0.47 from
/// `is_in_country` and 0.20 on average from five other football relations, "when" 0.39
/// from `release_year` and 0.17 from the other film relations), so standing out is
/// what tells, not the floor; "who" stands out from no relation of either graph.
pub const ASKED_COSINE: f32 = 0.35;

/// How far ahead of the second-nearest relation the nearest must be for a word to name
/// it ("daughter" is 0.57 from `parents` and 0.56 from `children`: it names neither).
const NEAREST_MARGIN: f32 = 0.05;

/// How far above its mean cosine to the graph's other relations a word's nearest
/// relation must stand for the word to name it. A word of the graph's own domain sits
/// near every relation at once and names none ("movies" over a film graph: 0.52 to
/// `starred_actors`, 0.36 on average to the other eight, so 0.16 above them), while a
/// synonym stands out ("sex" 0.56 to `gender`, 0.23 above the other twelve; "mom"
/// 0.32, "faith" 0.46). This is the hubness correction of cross-lingual word
/// retrieval (CSLS) with the mean over every other relation. Measured on the dev
/// questions with MiniLM (docs/evaluation.md, "With MiniLM").
const DISTINCT_MIN: f32 = 0.2;

/// Whether the noun at `at` of `all` is followed by an inverted clause whose subject
/// is not a determined phrase: an auxiliary, then a word that is no determiner ("what
/// movies *did X* star in", "what films *are about* X"; not "what types *are the* films",
/// where the noun says what is asked of the films).
fn heads_inverted_clause(all: &[String], at: usize) -> bool {
    all.get(at + 1)
        .is_some_and(|w| super::answer_type::AUXILIARIES.contains(&w.as_str()))
        && all.get(at + 2).is_some_and(|w| !is_determiner(w))
}

/// Whether `cosines[index]` (a word's or phrase's cosine to one of the graph's
/// relations, `cosines` its cosines to all of them) stands [`DISTINCT_MIN`] above its
/// mean cosine to the others.
pub fn stands_out(cosines: &[f32], index: usize) -> bool {
    standing_out(cosines).nth(index).unwrap_or(false)
}

/// [`stands_out`] for every index of `cosines`, summing them once.
pub fn standing_out(cosines: &[f32]) -> impl Iterator<Item = bool> + '_ {
    let total: f32 = cosines.iter().sum();
    let others = cosines.len().saturating_sub(1);
    cosines.iter().map(move |&cosine| {
        let background = if others == 0 {
            0.0
        } else {
            (total - cosine) / others as f32
        };
        cosine - background >= DISTINCT_MIN
    })
}

/// Similarity credited to a relation whose label's embedding is the nearest to a
/// question word's (as much as a prefix match, so it can claim the word and earn the
/// focus bonus).
const EMBEDDED_SYNONYM: f32 = 0.8;

/// Per hop: whether the hop walks its relation from object to subject.
fn against_steps(metapaths: &[&Metapath]) -> Vec<Vec<bool>> {
    metapaths
        .iter()
        .map(|m| {
            m.steps
                .iter()
                .map(|s| s.direction == Direction::In)
                .collect()
        })
        .collect()
}

/// Whether hop `hop` of sequence `index` is known to walk its relation from subject to
/// object (`against` as in [`Relevance::score_sequences`]; unknown reads as not).
fn walks_forward(against: &[Vec<bool>], index: usize, hop: usize) -> bool {
    against
        .get(index)
        .and_then(|hops| hops.get(hop))
        .is_some_and(|&back| !back)
}

/// Whether metapath `index`'s first hop leaves the named entity forward (subject to
/// object); `None` where the directions are not known.
fn first_hop_forward(against: &[Vec<bool>], index: usize) -> Option<bool> {
    against
        .get(index)
        .and_then(|hops| hops.first())
        .map(|&back| !back)
}

/// Per hop: whether the hop follows the previous hop's relation back (the round trip of
/// a shared value, "the films with the same director as X").
pub(crate) fn returning_steps(metapath: &Metapath) -> Vec<bool> {
    let steps = &metapath.steps;
    (0..steps.len())
        .map(|hop| {
            hop > 0
                && steps[hop].relation == steps[hop - 1].relation
                && steps[hop].direction != steps[hop - 1].direction
        })
        .collect()
}

/// [`returning_steps`] of each metapath.
fn returning_hops(metapaths: &[&Metapath]) -> Vec<Vec<bool>> {
    metapaths.iter().map(|m| returning_steps(m)).collect()
}

/// A sequence's hop tokens, each hop's with the classes of the nodes it reaches
/// ([`CLASS_TOKEN`]).
fn with_end_classes(
    mut relations: Vec<Vec<String>>,
    classes: Option<&Vec<Vec<String>>>,
) -> Vec<Vec<String>> {
    for (tokens, classes) in relations.iter_mut().zip(classes.into_iter().flatten()) {
        tokens.extend(classes.iter().map(|stem| format!("{CLASS_TOKEN}{stem}")));
    }
    relations
}

/// Each relation's stems, plus [`RETURN_TOKEN`] for a hop that walks the previous one
/// back, so that it may claim a word marking a shared value.
fn with_return_tokens(
    mut relations: Vec<Vec<String>>,
    returns: Option<&Vec<bool>>,
) -> Vec<Vec<String>> {
    for (tokens, _) in relations
        .iter_mut()
        .zip(returns.into_iter().flatten())
        .filter(|(_, &back)| back)
    {
        tokens.push(RETURN_TOKEN.to_owned());
    }
    relations
}

impl Relevance {
    pub fn lexical(question: &str, entity_names: &[&str]) -> Self {
        Self {
            question: Arc::from(question),
            asking: Arc::from(
                kgmesh_models::lexical::text::words_asking(question, entity_names).join(" "),
            ),
            terms: QuestionTerms::new(question, entity_names),
            embedded: None,
            words_opt: None,
            cues_opt: None,
            graph_relations: None,
            holder_words: Arc::default(),
        }
    }

    /// The graph's relation names, to match question words against by embedding: a word
    /// names the relation nearest to it among all of the graph's, not merely among the
    /// few a handful of sequences happen to use (where "movies" is nearest to
    /// `starred_actors` for want of better).
    pub fn with_graph_relations(mut self, relations: Arc<[String]>) -> Self {
        if !relations.is_empty() {
            self.graph_relations = Some(relations);
        }
        self
    }

    /// The words of relation names that call what has the relation, as the graph's
    /// names show them (`kg_linker::core::holder_words`): on a hop walked forward they
    /// do not name what the hop reaches ([`super::text::relation_tokens_holding`]).
    pub fn with_holder_words(mut self, holders: Arc<HashMap<String, Vec<String>>>) -> Self {
        self.holder_words = holders;
        self
    }

    /// The graph's holder words ([`Self::with_holder_words`]); none when not read.
    pub fn holder_words(&self) -> &HashMap<String, Vec<String>> {
        &self.holder_words
    }

    /// A hop's tokens: [`super::text::relation_tokens_holding`] with the graph's holder
    /// words.
    fn hop_tokens(&self, relation: &str, forward: bool) -> Vec<String> {
        let holder = self
            .holder_words
            .get(relation)
            .map_or(&[][..], Vec::as_slice);
        super::text::relation_tokens_holding(relation, forward, holder)
    }

    /// Adds what the plan cache's lexicon says the question's words mean: relation
    /// sequences scored by [`Self::metapaths`] may explain a word by a step it was
    /// learned with. Cues for words the question does not have are ignored.
    pub fn with_cues(mut self, cues: &[RelationCue]) -> Self {
        let stems = self.terms.stems();
        let mut table = CueTable {
            per_word: vec![HashMap::new(); stems.len()],
            strength: vec![0.0; stems.len()],
        };
        let mut any = false;
        for cue in cues {
            for (index, stem) in stems.iter().enumerate() {
                if *stem == cue.word && cue.weight.is_finite() && cue.weight > 0.0 {
                    let weight = cue.weight.min(1.0);
                    table.per_word[index].insert((cue.relation.clone(), cue.inverse), weight);
                    table.strength[index] = table.strength[index].max(weight);
                    any = true;
                }
            }
        }
        self.cues_opt = any.then_some(table);
        self
    }

    /// Whether learned cues take part in [`Self::metapaths`].
    pub fn uses_cues(&self) -> bool {
        self.cues_opt.is_some()
    }

    /// The question word (not in `used`) that `relation`, followed this way, explains
    /// best: by the words of its name, or by a cue learned from past plans; the
    /// similarity and the word's index.
    pub fn relation_match(
        &self,
        relation: &str,
        inverse: bool,
        used: &[bool],
    ) -> Option<(f32, usize)> {
        let lexical = self.terms.best_relation_match(relation, used);
        let cued = self.cues_opt.as_ref().and_then(|table| {
            let key = (relation.to_owned(), inverse);
            table
                .per_word
                .iter()
                .enumerate()
                .filter(|(index, _)| !used.get(*index).copied().unwrap_or(false))
                .filter_map(|(index, per_step)| per_step.get(&key).map(|&w| (w, index)))
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
        });
        match (lexical, cued) {
            (Some(l), Some(c)) => Some(if c.0 > l.0 { c } else { l }),
            (l, c) => l.or(c),
        }
    }

    /// Embedding relevance; falls back to lexical when the question cannot be embedded.
    pub async fn new(
        question: &str,
        entity_names: &[&str],
        vectors_opt: Option<Arc<TextVectors>>,
    ) -> Self {
        let mut relevance = Self::lexical(question, entity_names);
        if let Some(vectors) = vectors_opt {
            match vectors.embedder().embed(&[question.to_owned()]).await {
                Ok(mut embedded) if embedded.len() == 1 => {
                    let question_vector: Arc<[f32]> = embedded.remove(0).into();
                    relevance.embedded = Some((vectors, question_vector));
                }
                Ok(_) => tracing::warn!("embedder returned no vector; lexical relevance"),
                Err(error) => tracing::warn!(%error, "question not embedded; lexical relevance"),
            }
        }
        relevance
    }

    /// Relevance for ranking relation sequences (the LLM-free KG-Linker and the
    /// summarizer): lexical, plus the nearest relation of a question word by embedding
    /// (from [`SYNONYM_COSINE`]) when an embedder is configured. Relation names are
    /// single words or short phrases, which a whole-question embedding compares poorly;
    /// word embeddings fill only what a stemmer misses.
    pub fn for_metapaths(
        question: &str,
        entity_names: &[&str],
        vectors_opt: Option<Arc<TextVectors>>,
    ) -> Self {
        let relevance = Self::lexical(question, entity_names);
        match vectors_opt {
            Some(vectors) => relevance.with_word_vectors(vectors, SYNONYM_COSINE),
            None => relevance,
        }
    }

    /// Scores relation sequences lexically plus word embeddings: a question word names
    /// the relation nearest to it when their cosine reaches `synonym_cosine` (see
    /// [`Self::nearest_relations`]). Each distinct word and label is embedded once
    /// (cached in `vectors`).
    pub fn with_word_vectors(mut self, vectors: Arc<TextVectors>, synonym_cosine: f32) -> Self {
        self.words_opt = Some((vectors, synonym_cosine));
        self
    }

    pub fn terms(&self) -> &QuestionTerms {
        &self.terms
    }

    /// Keeps a word read as naming the named entity's class ("the *film* Heat") only
    /// where `fits` says the entity may be of that class
    /// ([`QuestionTerms::not_entity_class`]).
    pub fn with_entity_classes_checked(mut self, fits: impl Fn(&str) -> bool) -> Self {
        let misread: Vec<usize> = self
            .terms
            .entity_class_words()
            .into_iter()
            .filter(|(_, word)| !fits(word))
            .map(|(index, _)| index)
            .collect();
        for index in misread {
            self.terms.not_entity_class(index);
        }
        self
    }

    /// The word embeddings relation sequences are scored with, when an embedder is
    /// configured.
    pub fn word_vectors(&self) -> Option<&Arc<TextVectors>> {
        self.words_opt.as_ref().map(|(vectors, _)| vectors)
    }

    /// The question as asked.
    /// The question's words outside its entities' names, as text: what it asks, not
    /// what it is about.
    pub fn asking(&self) -> &str {
        &self.asking
    }

    pub fn question(&self) -> &str {
        &self.question
    }

    pub fn uses_embeddings(&self) -> bool {
        self.embedded.is_some()
    }

    /// Relevance of each text, in order.
    pub async fn texts(&self, texts: &[String]) -> Vec<f32> {
        if let Some((vectors, question)) = &self.embedded {
            match vectors.vectors(texts).await {
                Ok(found) => return found.iter().map(|v| cosine(question, v)).collect(),
                Err(error) => tracing::warn!(%error, "texts not embedded; lexical relevance"),
            }
        }
        texts.iter().map(|t| self.terms.text_score(t)).collect()
    }

    /// Relevance of relation sequences; `verbalized[i]` is sequence `i` as text (what the
    /// embedder reads).
    pub async fn sequences(&self, sequences: &[Vec<String>], verbalized: &[String]) -> Vec<f32> {
        fit_scores(
            &self
                .score_sequences(sequences, &[], &[], verbalized, None, &[])
                .await,
        )
    }

    /// Relevance of metapaths; like [`Self::sequences`], and with the learned cues of
    /// [`Self::with_cues`] (which know a relation's direction).
    pub async fn metapaths(&self, metapaths: &[&Metapath], verbalized: &[String]) -> Vec<f32> {
        fit_scores(&self.metapath_fits(metapaths, verbalized).await)
    }

    /// [`Self::metapaths`], each with how many of its hops no question word explains.
    pub async fn metapath_fits(
        &self,
        metapaths: &[&Metapath],
        verbalized: &[String],
    ) -> Vec<SequenceFit> {
        self.metapath_fits_ending(metapaths, verbalized, &[]).await
    }

    /// [`Self::metapath_fits`], where `end_classes[i][h]` holds the stems of the
    /// classes of the nodes hop `h` of metapath `i` reaches (`kg_linker::core::classes_held`;
    /// shorter or empty where unknown): the word naming the answers' class ("which
    /// *clubs* are from X") is explained by what the path reaches, not by a relation
    /// named like it on a hop past nodes of that class ([`CLASS_TOKEN`]).
    pub async fn metapath_fits_ending(
        &self,
        metapaths: &[&Metapath],
        verbalized: &[String],
        end_classes: &[Vec<Vec<String>>],
    ) -> Vec<SequenceFit> {
        let (sequences, learned) = self.sequences_of(metapaths);
        let returns = returning_hops(metapaths);
        let against = against_steps(metapaths);
        self.score_sequences(
            &sequences,
            &returns,
            &against,
            verbalized,
            learned.as_deref(),
            end_classes,
        )
        .await
    }

    /// [`Self::metapaths`] by the words of relation names and the learned cues only (no
    /// embeddings), computed at once.
    pub fn metapaths_lexically(&self, metapaths: &[&Metapath]) -> Vec<f32> {
        self.metapaths_lexically_ending(metapaths, &[])
    }

    /// [`Self::metapaths_lexically`] with the classes of what each metapath reaches, as
    /// in [`Self::metapath_fits_ending`].
    pub fn metapaths_lexically_ending(
        &self,
        metapaths: &[&Metapath],
        end_classes: &[Vec<Vec<String>>],
    ) -> Vec<f32> {
        let (sequences, learned) = self.sequences_of(metapaths);
        fit_scores(&self.lexical_fits(
            &sequences,
            &returning_hops(metapaths),
            &against_steps(metapaths),
            learned.as_deref(),
            end_classes,
        ))
    }

    /// The relation names of `metapaths`, and each one's learned cues per hop.
    #[allow(clippy::type_complexity)]
    fn sequences_of(
        &self,
        metapaths: &[&Metapath],
    ) -> (Vec<Vec<String>>, Option<Vec<Vec<Vec<f32>>>>) {
        let sequences: Vec<Vec<String>> = metapaths
            .iter()
            .map(|m| m.steps.iter().map(|s| s.relation.clone()).collect())
            .collect();
        let learned: Option<Vec<Vec<Vec<f32>>>> = self.cues_opt.as_ref().map(|table| {
            metapaths
                .iter()
                .map(|m| {
                    let steps: Vec<(&str, bool)> = m
                        .steps
                        .iter()
                        .map(|s| (s.relation.as_str(), s.direction == Direction::In))
                        .collect();
                    table.hop_word(&steps)
                })
                .collect()
        });
        (sequences, learned)
    }

    /// Whether the plan cache's lexicon associates question word `index` with some
    /// relation step.
    fn learned_word(&self, index: usize) -> bool {
        self.cue_strength(index) > 0.0
    }

    /// Whether the lexicon ties question word `index` strongly to a relation step
    /// ([`STRONG_CUE`]): what verified plans taught about a word outranks what a
    /// general-purpose embedder guesses it means, so such a word names no relation by
    /// embedding. A weaker cue, a word seen in one verified plan, sits beside the
    /// embedder's reading instead of silencing it: a cache warmed with a few dozen QA
    /// pairs holds one for nearly every word, and letting each such cue outrank the
    /// embedder broke questions the cold reading had right.
    fn strongly_learned_word(&self, index: usize) -> bool {
        self.cue_strength(index) >= STRONG_CUE
    }

    /// Question word `index`'s strongest learned association with any step (0 without).
    fn cue_strength(&self, index: usize) -> f32 {
        self.cues_opt
            .as_ref()
            .and_then(|table| table.strength.get(index))
            .copied()
            .unwrap_or(0.0)
    }

    /// The learned cues of sequence `index`, when there are any.
    fn learned<'a>(
        &'a self,
        hop_words: Option<&'a [Vec<Vec<f32>>]>,
        index: usize,
    ) -> Option<LearnedCues<'a>> {
        let table = self.cues_opt.as_ref()?;
        Some(LearnedCues {
            hop_word: hop_words?.get(index)?,
            strength: &table.strength,
        })
    }

    /// `returns[i][h]`: hop `h` of sequence `i` walks hop `h - 1`'s relation back;
    /// `against[i][h]`: it walks its relation from object to subject (both empty when
    /// directions are unknown).
    async fn score_sequences(
        &self,
        sequences: &[Vec<String>],
        returns: &[Vec<bool>],
        against: &[Vec<bool>],
        verbalized: &[String],
        hop_words: Option<&[Vec<Vec<f32>>]>,
        end_classes: &[Vec<Vec<String>>],
    ) -> Vec<SequenceFit> {
        if let Some((vectors, cosine)) = &self.words_opt {
            match self
                .sequences_with_words(
                    sequences,
                    returns,
                    against,
                    (vectors, *cosine),
                    hop_words,
                    end_classes,
                )
                .await
            {
                Ok(scores) => return scores,
                Err(error) => tracing::warn!(%error, "words not embedded; lexical relevance"),
            }
        }
        if self.embedded.is_some() {
            // A whole-sequence cosine says nothing of single hops.
            return self
                .texts(verbalized)
                .await
                .into_iter()
                .map(|score| SequenceFit {
                    score,
                    unexplained_hops: 0,
                })
                .collect();
        }
        self.lexical_fits(sequences, returns, against, hop_words, end_classes)
    }

    /// `against` as in [`Self::score_sequences`].
    fn lexical_fits(
        &self,
        sequences: &[Vec<String>],
        returns: &[Vec<bool>],
        against: &[Vec<bool>],
        hop_words: Option<&[Vec<Vec<f32>>]>,
        end_classes: &[Vec<Vec<String>>],
    ) -> Vec<SequenceFit> {
        // Few distinct relations, many sequences: stem each relation once.
        let mut stems: HashMap<(&str, bool), Vec<String>> = HashMap::new();
        let unknown = self.unknown_words(sequences, &[]);
        let asks_where = self.terms.asks_where();
        let mut places: HashMap<&str, bool> = HashMap::new();
        sequences
            .iter()
            .enumerate()
            .map(|(index, sequence)| {
                let mut relations: Vec<Vec<String>> = sequence
                    .iter()
                    .enumerate()
                    .map(|(hop, relation)| {
                        let forward = walks_forward(against, index, hop);
                        stems
                            .entry((relation.as_str(), forward))
                            .or_insert_with(|| self.hop_tokens(relation, forward))
                            .clone()
                    })
                    .collect();
                if let Some((last, before)) = relations.split_last_mut() {
                    let hop = before.len();
                    let relation = sequence[hop].as_str();
                    if asks_where
                        && walks_forward(against, index, hop)
                        && *places
                            .entry(relation)
                            .or_insert_with(|| reaches_a_place(relation))
                        && !before
                            .iter()
                            .any(|other| super::text::same_relation(other, last))
                    {
                        last.push(super::text::ASKED_KIND_TOKEN.to_owned());
                    }
                }
                let relations = with_end_classes(relations, end_classes.get(index));
                let relations = with_return_tokens(relations, returns.get(index));
                self.terms.sequence_fit(
                    &relations,
                    None,
                    self.learned(hop_words, index),
                    Some(&unknown),
                    first_hop_forward(against, index),
                )
            })
            .collect()
    }

    /// The relations question words may be explained by: the graph's
    /// ([`Self::with_graph_relations`]), else those of the sequences scored.
    fn relation_names<'a>(&'a self, sequences: &'a [Vec<String>]) -> Vec<&'a str> {
        let mut names: Vec<&str> = match &self.graph_relations {
            Some(graph) => graph.iter().map(String::as_str).collect(),
            None => sequences.iter().flatten().map(String::as_str).collect(),
        };
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Per question word: no relation ([`Self::relation_names`]) explains it, by the
    /// stems of its name, a cue learned from verified plans, or an embedding
    /// (`named[i]`).
    fn unknown_words(&self, sequences: &[Vec<String>], named: &[bool]) -> Vec<bool> {
        use super::text::{relation_stems, stem_similarity};
        let stems: Vec<String> = self
            .relation_names(sequences)
            .into_iter()
            .flat_map(relation_stems)
            .collect();
        self.terms
            .stems()
            .iter()
            .enumerate()
            .map(|(index, word)| {
                !named.get(index).copied().unwrap_or(false)
                    && !self.learned_word(index)
                    && !stems
                        .iter()
                        .any(|token| stem_similarity(token, word) >= CLAIM_MIN)
            })
            .collect()
    }

    /// Per question word: the relation whose label is nearest to it by embedding,
    /// among the graph's relations ([`Self::with_graph_relations`]; else those of
    /// `sequences`), when the cosine reaches `min_cosine`, no other relation comes
    /// within [`NEAREST_MARGIN`] and it stands out from the rest ([`DISTINCT_MIN`]).
    /// `None` for a word some relation already matches by its letters, a word naming
    /// an entity's class or heading a relative clause (the answer's class, right after
    /// "what"/"which", may name one), and a word marking a shared value: nearest
    /// neighbours in embedding space are often merely related words ("films" sits near
    /// `starred_actors`, `directed_by` and `has_genre` alike). `None` too for "where"
    /// when another word of the question is explained and the question describes no
    /// node it locates (see the body).
    async fn nearest_relations(
        &self,
        sequences: &[Vec<String>],
        vectors: &TextVectors,
        min_cosine: f32,
        matched: &[bool],
    ) -> Result<Vec<Option<String>>, EmbedError> {
        let relations = self.relation_names(sequences);
        let labels: Vec<String> = relations
            .iter()
            .map(|r| super::text::relation_label(r))
            .collect();
        let question = self.terms.raw_words();
        let texts: Vec<String> = labels.iter().chain(question).cloned().collect();
        let found = vectors.vectors(&texts).await?;
        let (label_vectors, question_vectors) = found.split_at(labels.len());
        let mut nearest: Vec<Option<String>> = question_vectors
            .iter()
            .enumerate()
            .map(|(index, word)| {
                if matched.get(index).copied().unwrap_or(true)
                    || self.strongly_learned_word(index)
                    || (self.terms.names_a_class(index)
                        && !self.terms.names_the_answers_class(index))
                    || self.names_answers_of_a_kind(index)
                    || self.terms.marks_shared_value(index)
                {
                    return None;
                }
                let mut ranked: Vec<(f32, &str)> = label_vectors
                    .iter()
                    .zip(&relations)
                    .map(|(label, relation)| (cosine(word, label), *relation))
                    .collect();
                ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
                let (best, relation) = *ranked.first()?;
                let second = ranked.get(1).map_or(0.0, |s| s.0);
                let cosines: Vec<f32> = ranked.iter().map(|(c, _)| *c).collect();
                let floor = if self.terms.asks_a_kind(index) {
                    min_cosine.min(ASKED_COSINE)
                } else {
                    min_cosine
                };
                // Where the grammar says the word names a relation of the nodes after
                // it, the nearest relation is the one it names, as long as it is the
                // nearest by the margin: no floor, and no standing out from the rest.
                if self.names_an_attribute(index) {
                    return (best - second >= NEAREST_MARGIN).then(|| relation.to_owned());
                }
                (best >= floor && best - second >= NEAREST_MARGIN && stands_out(&cosines, 0))
                    .then(|| relation.to_owned())
            })
            .collect();
        // "Where" asks for a place, which the relation another word of the question
        // explains already reaches ("where was X *born*", "where is X
        // *headquartered*"): naming a relation of its own it would add a hop, to the
        // country the city lies in. It names one where nothing else does ("where is
        // X"), or where the question locates a node it describes ("where is the club
        // *that* X plays for").
        let other_explained = |index: usize| {
            (0..question.len()).any(|other| {
                other != index
                    && !self.terms.names_a_class(other)
                    && !self.terms.marks_shared_value(other)
                    && (matched.get(other).copied().unwrap_or(false)
                        || self.learned_word(other)
                        || nearest.get(other).is_some_and(Option::is_some))
            })
        };
        let locates_a_described_node = (0..question.len()).any(|other| {
            self.terms.names_a_class(other) && !self.terms.names_the_answers_class(other)
        });
        let asking_place = (0..question.len())
            .find(|&index| self.terms.asks_a_kind(index) && question[index] == "where");
        if let Some(index) = asking_place {
            if !locates_a_described_node && other_explained(index) {
                nearest[index] = None;
            }
        }
        Ok(nearest)
    }

    /// Whether question word `index` follows "what" and is followed by a copula and a
    /// determiner ("what *types* are the films directed by X"): it names an attribute
    /// of the nodes the phrase after it describes, so a relation of theirs. By
    /// embedding such a word names its nearest relation however near, when no other is
    /// as near ([`NEAREST_MARGIN`]): MiniLM puts "types" 0.31 from `has genre`, under
    /// [`SYNONYM_COSINE`] and not [`DISTINCT_MIN`] above the rest.
    fn names_an_attribute(&self, index: usize) -> bool {
        let Some((word, all)) = self.answers_class_word(index) else {
            return false;
        };
        all.windows(4).any(|w| {
            w[0] == "what"
                && w[1] == *word
                && matches!(w[2].as_str(), "is" | "are" | "was" | "were")
                && is_determiner(&w[3])
        })
    }

    /// Question word `index`, with the question's [`super::text::words`], when it names
    /// the answers' class and is no asking wh-word ("which *books*", "what *types*").
    fn answers_class_word(&self, index: usize) -> Option<(&String, Vec<String>)> {
        let word = self.terms.raw_words().get(index)?;
        (self.terms.names_the_answers_class(index) && !self.terms.asks_a_kind(index))
            .then(|| (word, super::text::words(&self.question)))
    }

    /// Whether question word `index` is a plural noun right after "which" or "how many",
    /// or ending the class phrase there ("which *books* did X write", "how many *books*
    /// …", "which historical *novels*"): it names the kind of entity
    /// the answers are (or that is counted), which a relation near it by meaning
    /// ("books" reads near `held at` and `home library`) does not explain.
    /// After "what" a word may name an attribute the answer is a value of ("what *sex*" is
    /// `gender`, "what *types* are the films" is `has_genre`), and so may a singular one
    /// after "which" ("which *faith*"): those keep their nearest relation. A plural after
    /// "what" that is the object of the clause after it, whose subject is not a phrase
    /// of its own ("what *movies* did X star in", "what *films* are about X"), is read as
    /// after "which": it is what the answers are, not a relation of theirs ("movies"
    /// sits near `genre`). So is one after "what are the" ("what are the *movies* that
    /// share …").
    fn names_answers_of_a_kind(&self, index: usize) -> bool {
        let Some((word, all)) = self.answers_class_word(index).or_else(|| {
            // The noun ending a longer class phrase: "which historical *novels*".
            let word = self.terms.raw_words().get(index)?;
            self.terms
                .is_the_answers_class_noun(index)
                .then(|| (word, super::text::words(&self.question)))
        }) else {
            return false;
        };
        let before = |at: usize, back: usize| at.checked_sub(back).map_or("", |i| all[i].as_str());
        // Where the phrase the word ends begins.
        let start = |mut at: usize| {
            while at > 0
                && !is_stop_word(&all[at - 1])
                && !matches!(all[at - 1].as_str(), "many" | "much")
            {
                at -= 1;
            }
            at
        };
        super::text::looks_plural(word)
            && all.iter().enumerate().any(|(at, w)| {
                w == word
                    && (matches!(before(start(at), 1), "which" | "many")
                        || (before(at, 1) == "what" && heads_inverted_clause(&all, at))
                        || super::text::follows_what_are_the(&all, start(at)))
            })
    }

    /// Sequences scored by the words of their relation names, plus, for each question
    /// word no name matches, the relation nearest to it by embedding
    /// ([`Self::nearest_relations`]): a hop along that relation may claim the word as
    /// if a stem matched ("sex" names `gender`, "mom" `parents`, "faith" `religion`).
    /// A word saying what the answers are, a wh-word asking for a kind of answer
    /// ("*where*", "*when*") or the word naming their class ("which *city*"), names what
    /// its nearest relation points to, so only a hop walking that relation from subject
    /// to object may claim it: `located in` walked back from a city reaches what is in
    /// the city, not a place nor a city (`against` as in [`Self::score_sequences`]).
    async fn sequences_with_words(
        &self,
        sequences: &[Vec<String>],
        returns: &[Vec<bool>],
        against: &[Vec<bool>],
        (vectors, min_cosine): (&TextVectors, f32),
        hop_words: Option<&[Vec<Vec<f32>>]>,
        end_classes: &[Vec<Vec<String>>],
    ) -> Result<Vec<SequenceFit>, EmbedError> {
        use super::text::{relation_stems, stem_similarity};
        let mut stems: HashMap<&str, Vec<String>> = HashMap::new();
        let mut hop_tokens: HashMap<(&str, bool), Vec<String>> = HashMap::new();
        for (index, sequence) in sequences.iter().enumerate() {
            for (hop, relation) in sequence.iter().enumerate() {
                stems
                    .entry(relation.as_str())
                    .or_insert_with(|| relation_stems(relation));
                let forward = walks_forward(against, index, hop);
                hop_tokens
                    .entry((relation.as_str(), forward))
                    .or_insert_with(|| self.hop_tokens(relation, forward));
            }
        }
        let matched: Vec<bool> = self
            .terms
            .stems()
            .iter()
            .map(|word| {
                stems
                    .values()
                    .flatten()
                    .any(|token| stem_similarity(token, word) >= CLAIM_MIN)
            })
            .collect();
        let nearest = self
            .nearest_relations(sequences, vectors, min_cosine, &matched)
            .await?;
        let named: Vec<bool> = nearest.iter().map(Option::is_some).collect();
        // The relations named by a word saying what the answers are: the asking
        // wh-word ("where") or the word naming the answers' class ("which *city*").
        let kind_relations: Vec<&str> = nearest
            .iter()
            .enumerate()
            .filter(|(index, _)| self.terms.names_the_answers_class(*index))
            .filter_map(|(_, relation)| relation.as_deref())
            .collect();
        let unknown = self.unknown_words(sequences, &named);
        let extra = |token: &str, index: usize| -> f32 {
            let Some(relation) = token.strip_prefix(RELATION_TOKEN) else {
                return 0.0;
            };
            let (relation, walked_back) = match relation.strip_suffix(AGAINST_TOKEN) {
                Some(relation) => (relation, true),
                None => (relation, false),
            };
            let names = nearest.get(index).and_then(Option::as_deref) == Some(relation);
            if names && !(walked_back && self.terms.names_the_answers_class(index)) {
                EMBEDDED_SYNONYM
            } else {
                0.0
            }
        };
        Ok(sequences
            .iter()
            .enumerate()
            .map(|(index, sequence)| {
                let relations: Vec<Vec<String>> = sequence
                    .iter()
                    .enumerate()
                    .map(|(hop, relation)| {
                        let mut tokens = hop_tokens
                            .get(&(relation.as_str(), walks_forward(against, index, hop)))
                            .cloned()
                            .unwrap_or_default();
                        // Marked only where it matters, so that a hop's tokens
                        // otherwise read as they did without directions.
                        let back = kind_relations.contains(&relation.as_str())
                            && against
                                .get(index)
                                .and_then(|hops| hops.get(hop))
                                .is_some_and(|&back| back);
                        tokens.push(if back {
                            format!("{RELATION_TOKEN}{relation}{AGAINST_TOKEN}")
                        } else {
                            format!("{RELATION_TOKEN}{relation}")
                        });
                        tokens
                    })
                    .collect();
                let relations = with_end_classes(relations, end_classes.get(index));
                let relations = with_return_tokens(relations, returns.get(index));
                self.terms.sequence_fit(
                    &relations,
                    Some(&extra),
                    self.learned(hop_words, index),
                    Some(&unknown),
                    first_hop_forward(against, index),
                )
            })
            .collect())
    }
}

/// Whether the words of `relation`'s name that say what it reaches call it a place
/// ([`super::text::ASKED_KIND_TOKEN`]).
fn reaches_a_place(relation: &str) -> bool {
    super::text::relation_head_words(relation)
        .iter()
        .any(|word| super::answer_type::names_kind(word, super::answer_type::AnswerType::Place))
}

/// The scores of `fits`, in order.
pub(crate) fn fit_scores(fits: &[SequenceFit]) -> Vec<f32> {
    fits.iter().map(|fit| fit.score).collect()
}
