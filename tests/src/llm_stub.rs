//! A scripted OpenAI-compatible chat server — test tooling, not a language model.
//!
//! It answers `POST …/chat/completions` on a random loopback port with whatever its
//! [`Script`] says: a fixed text (nonsense, an empty reply), an HTTP error status, or a
//! reply computed from the prompt (an oracle that knows the gold plans and answers). It
//! lets tests and measurements drive kgmesh's model path with a model that is broken, or
//! always right, in a known way; the real model path is exercised with
//! `scripts/local-llm`.
//!
//! ```no_run
//! use kgmesh_testkit::llm_stub::{LlmStub, Script};
//! let stub = LlmStub::start(Script::text("lorem ipsum"));
//! // OPENAI_BASE_URL=<stub.base_url()> makes kgmesh use it; stopped when dropped.
//! println!("{}", stub.base_url());
//! ```

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::Duration,
};

/// What the stub answers one chat request with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StubReply {
    /// HTTP 200 with this assistant message.
    Text(String),
    /// This HTTP status with a JSON error body.
    Status(u16),
}

/// How the stub answers: the same for every request, or computed from the request's
/// messages (joined by newlines).
#[derive(Clone)]
pub enum Script {
    Fixed(StubReply),
    Computed(Arc<dyn Fn(&str) -> StubReply + Send + Sync>),
}

impl Script {
    /// Every request gets `text`.
    pub fn text(text: &str) -> Self {
        Script::Fixed(StubReply::Text(text.to_owned()))
    }

    /// Every request gets HTTP `status`.
    pub fn status(status: u16) -> Self {
        Script::Fixed(StubReply::Status(status))
    }

    /// Each request gets `reply(prompt)`.
    pub fn computed(reply: impl Fn(&str) -> StubReply + Send + Sync + 'static) -> Self {
        Script::Computed(Arc::new(reply))
    }

    fn reply(&self, prompt: &str) -> StubReply {
        match self {
            Script::Fixed(reply) => reply.clone(),
            Script::Computed(reply) => reply(prompt),
        }
    }
}

/// Which prompts an [`oracle`] answers; the others get HTTP 400, so their roles use
/// their LLM-free rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OracleRoles {
    pub kg_linker: bool,
    pub judge: bool,
    pub summarizer: bool,
}

impl OracleRoles {
    /// The KG-Linker, the judge and the summarizer.
    pub const ALL: OracleRoles = OracleRoles {
        kg_linker: true,
        judge: true,
        summarizer: true,
    };

    /// Reads `kg-linker,judge,summarizer` (any of them, comma-separated).
    pub fn parse(list: &str) -> Result<OracleRoles, String> {
        let mut roles = OracleRoles {
            kg_linker: false,
            judge: false,
            summarizer: false,
        };
        for role in list.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            match role {
                "kg-linker" => roles.kg_linker = true,
                "judge" => roles.judge = true,
                "summarizer" => roles.summarizer = true,
                other => {
                    return Err(format!(
                        "unknown oracle role {other:?} (kg-linker, judge, summarizer)"
                    ))
                }
            }
        }
        Ok(roles)
    }
}

/// The first line of each role's system prompt (`kgmesh_models::prompts`), by which the
/// oracle tells the prompts apart; `cli/tests/model_fallback.rs` fails when they no
/// longer open the real prompts.
const KG_LINKER_PROMPT: &str = "You link questions to a knowledge graph";
const JUDGE_PROMPT: &str = "You check whether retrieved knowledge-graph facts are enough";
const SUMMARIZER_PROMPT: &str = "You answer questions from knowledge-graph facts only";

/// The role whose prompt `prompt` is: `kg-linker`, `judge` or `summarizer`, or `None`
/// for any other prompt.
pub fn prompt_role(prompt: &str) -> Option<&'static str> {
    use kgmesh_schemas::Role;
    [
        (KG_LINKER_PROMPT, Role::KG_LINKER),
        (JUDGE_PROMPT, Role::JUDGE),
        (SUMMARIZER_PROMPT, Role::SUMMARIZER),
    ]
    .into_iter()
    .find(|(opening, _)| prompt.contains(opening))
    .map(|(_, role)| role)
}

/// What question files say of each question: its gold plan (IRN files only) and its
/// acceptable answers.
#[derive(Default)]
struct Gold {
    plans: std::collections::HashMap<String, String>,
    answers: std::collections::HashMap<String, Vec<String>>,
}

impl Gold {
    /// Question files in the IRN format (PathQuestion, WC2014: `question TAB answers TAB
    /// path`, the path `topic#relation#node#…` with `*` between the paths of a
    /// conjunctive question and `_inverse` marking a relation followed backwards; answers
    /// written `name(alias/alias/)`, WC2014 adding every valid answer as `A/B/` in the
    /// fourth field) or MetaQA's (`question TAB answer|answer`), each line by its shape.
    fn read(texts: &[String]) -> Gold {
        let mut gold = Gold::default();
        for line in texts.iter().flat_map(|text| text.lines()) {
            let columns: Vec<&str> = line.trim_end_matches('\r').split('\t').collect();
            let (Some(question), Some(written)) = (columns.first(), columns.get(1)) else {
                continue;
            };
            let key = question_key(question);
            let path = columns.get(2).filter(|path| path.contains('#'));
            let answers: Vec<String> = match path {
                Some(_) => {
                    let (name, aliases) = written
                        .split_once('(')
                        .map(|(name, rest)| (name, rest.trim_end_matches(')')))
                        .unwrap_or((written, ""));
                    std::iter::once(name)
                        .chain(aliases.split('/'))
                        .chain(columns.get(3).into_iter().flat_map(|all| all.split('/')))
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .map(str::to_owned)
                        .collect()
                }
                None => written
                    .split('|')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
                    .collect(),
            };
            let mut seen = std::collections::HashSet::new();
            let answers: Vec<String> = answers
                .into_iter()
                .filter(|a| seen.insert(a.clone()))
                .collect();
            if !answers.is_empty() {
                gold.answers.insert(key.clone(), answers);
            }
            if let Some(plan) = path.and_then(|path| irn_plan(path)) {
                gold.plans.insert(key, plan);
            }
        }
        gold
    }
}

/// The KG-Linker reply naming an IRN gold path's topic entities and relation paths.
fn irn_plan(path: &str) -> Option<String> {
    let mut entities: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    for one in path.split('*') {
        let parts: Vec<&str> = one.split('#').collect();
        let Some(topic) = parts.first().filter(|t| !t.is_empty()) else {
            continue;
        };
        let relations: Vec<String> = parts
            .iter()
            .skip(1)
            .step_by(2)
            .take_while(|r| **r != "<end>")
            .map(|r| match r.strip_suffix("_inverse") {
                Some(forward) => format!("~{forward}"),
                None => (*r).to_owned(),
            })
            .collect();
        if relations.is_empty() {
            continue;
        }
        entities.push((*topic).to_owned());
        paths.push(relations.join(" -> "));
    }
    (!paths.is_empty()).then(|| {
        format!(
            "<entities>\n{}\n</entities>\n<paths>\n{}\n</paths>",
            entities.join("\n"),
            paths.join("\n")
        )
    })
}

/// An oracle: a model that is always right, for measuring what the pipeline loses when
/// the model is. Of the prompts `roles` names, for questions in the files:
/// - the KG-Linker gets the gold topic entities and relation paths (IRN files; MetaQA
///   files carry no path, so its questions get HTTP 400 and the LLM-free plan);
/// - the judge answers COMPLETE when a fact line it is sent names a gold answer, and
///   NEXT_ROUND when none does;
/// - the summarizer answers with the gold answers its fact lines name, citing them, and
///   with no answer when they name none.
///
/// The judge and summarizer read only what the prompt holds: an answer the pipeline did
/// not retrieve, or cut from the prompt, is not given. Every other prompt (traverser,
/// cache manager, an unknown question) gets HTTP 400.
pub fn oracle(texts: &[String], roles: OracleRoles) -> Script {
    let gold = Gold::read(texts);
    Script::computed(move |prompt| {
        let asked = prompt
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("Question: "))
            .map(question_key)
            .unwrap_or_default();
        let role = prompt_role(prompt);
        let reply = if role == Some(kgmesh_schemas::Role::KG_LINKER) {
            roles
                .kg_linker
                .then(|| gold.plans.get(&asked).cloned())
                .flatten()
        } else if role == Some(kgmesh_schemas::Role::JUDGE) && roles.judge {
            gold.answers.get(&asked).map(|answers| {
                if cited(prompt, answers).is_empty() {
                    "<verdict>NEXT_ROUND</verdict>\n<reason>No fact names the answer.</reason>"
                        .to_owned()
                } else {
                    "<verdict>COMPLETE</verdict>\n<reason>The facts name the answer.</reason>"
                        .to_owned()
                }
            })
        } else if role == Some(kgmesh_schemas::Role::SUMMARIZER) && roles.summarizer {
            gold.answers.get(&asked).map(|answers| {
                let found = cited(prompt, answers);
                if found.is_empty() {
                    return "<answers>\n</answers>\n<explanation>No fact names the answer.\
                            </explanation>"
                        .to_owned();
                }
                let limit = prompt
                    .split_once("at most ")
                    .and_then(|(_, rest)| {
                        rest.split(|c: char| !c.is_ascii_digit())
                            .next()?
                            .parse()
                            .ok()
                    })
                    .unwrap_or(usize::MAX)
                    .max(1);
                let lines: Vec<String> = found
                    .iter()
                    .take(limit)
                    .map(|(answer, labels)| format!("{answer} [{}]", labels.join(", ")))
                    .collect();
                format!("<answers>\n{}\n</answers>", lines.join("\n"))
            })
        } else {
            None
        };
        match reply {
            Some(text) => StubReply::Text(text),
            None => StubReply::Status(400),
        }
    })
}

/// The `answers` that the prompt's fact lines (`E3: …`) name, in `answers`' order, each
/// with the labels of up to three lines naming it.
fn cited(prompt: &str, answers: &[String]) -> Vec<(String, Vec<String>)> {
    let facts: Vec<(&str, &str)> = prompt
        .lines()
        .filter_map(|line| {
            let (label, text) = line.split_once(": ")?;
            let number = label.strip_prefix('E')?;
            (!number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
                .then_some((label, text))
        })
        .collect();
    answers
        .iter()
        .filter_map(|answer| {
            let labels: Vec<String> = facts
                .iter()
                .filter(|(_, text)| names(text, answer))
                .take(3)
                .map(|(label, _)| (*label).to_owned())
                .collect();
            (!labels.is_empty()).then(|| (answer.clone(), labels))
        })
        .collect()
}

/// Whether a fact line names `answer`: as one of a path's nodes (`A -[r]-> B <-[s]- C`,
/// so "Big" is not named by "Big Fish"), or as whole words of a query row or passage.
fn names(fact: &str, answer: &str) -> bool {
    let answer = answer.to_lowercase();
    if fact.contains(" -[") || fact.contains(" <-[") {
        let mut rest = fact;
        loop {
            let forward = rest.find(" -[");
            let backward = rest.find(" <-[");
            let (at, close) = match (forward, backward) {
                (Some(f), Some(b)) if b < f => (b, "]- "),
                (Some(f), _) => (f, "]-> "),
                (None, Some(b)) => (b, "]- "),
                (None, None) => return rest.trim().to_lowercase() == answer,
            };
            if rest[..at].trim().to_lowercase() == answer {
                return true;
            }
            match rest[at..].find(close) {
                Some(end) => rest = &rest[at + end + close.len()..],
                None => return false,
            }
        }
    }
    let fact = fact.to_lowercase();
    fact.match_indices(&answer).any(|(at, _)| {
        let before = fact[..at].chars().next_back();
        let after = fact[at + answer.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Letters and digits of a question, lower-cased, one space between words: the same
/// key for `a_b 's c ?` and `"A b's c?"`.
fn question_key(question: &str) -> String {
    question
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A running stub; stopped (and its thread joined) on drop.
pub struct LlmStub {
    address: SocketAddr,
    requests: Arc<AtomicUsize>,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl LlmStub {
    /// Starts the stub on a free loopback port; it accepts connections on return.
    pub fn start(script: Script) -> Self {
        Self::start_on(0, script).expect("cannot bind a loopback port for the LLM stub")
    }

    /// Starts the stub on `port` (0: any free one).
    pub fn start_on(port: u16, script: Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let address = listener.local_addr()?;
        let requests = Arc::new(AtomicUsize::new(0));
        let stopping = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (requests, stopping) = (requests.clone(), stopping.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (script, requests) = (script.clone(), requests.clone());
                    std::thread::spawn(move || serve(stream, &script, &requests));
                }
            })
        };
        Ok(Self {
            address,
            requests,
            stopping,
            acceptor: Some(acceptor),
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `OPENAI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Chat requests answered so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for LlmStub {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Serves the requests of one keep-alive connection.
fn serve(stream: TcpStream, script: &Script, requests: &AtomicUsize) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (status, payload) = if request_line.contains("/chat/completions") {
            requests.fetch_add(1, Ordering::SeqCst);
            let prompt = prompt_of(&body);
            match script.reply(&prompt) {
                StubReply::Text(text) => (200, completion(&text, &prompt)),
                StubReply::Status(status) => (
                    status,
                    serde_json::json!({"error": {"message": "scripted failure", "type": "stub"}})
                        .to_string(),
                ),
            }
        } else {
            (
                404,
                serde_json::json!({"error": {"message": "only chat completions are served"}})
                    .to_string(),
            )
        };
        let response = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{payload}",
            if status == 200 { "OK" } else { "Error" },
            payload.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// The request's messages' contents, joined by newlines.
fn prompt_of(body: &[u8]) -> String {
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(body) else {
        return String::new();
    };
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A chat completion carrying `text`, with a usage estimate of 4 characters a token.
fn completion(text: &str, prompt: &str) -> String {
    let prompt_tokens = prompt.len().div_ceil(4);
    let completion_tokens = text.len().div_ceil(4);
    serde_json::json!({
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": "llm-stub",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One POST to the stub; (status line, body).
    fn post(stub: &LlmStub, path: &str, body: &str) -> (String, String) {
        let mut stream =
            TcpStream::connect_timeout(&stub.address, Duration::from_secs(2)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
            if let Some(value) = header.to_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut payload = vec![0; length];
        reader.read_exact(&mut payload).unwrap();
        (status, String::from_utf8(payload).unwrap())
    }

    #[test]
    fn answers_chat_completions_from_its_script() {
        let stub = LlmStub::start(Script::computed(|prompt| {
            if prompt.contains("refuse") {
                StubReply::Status(400)
            } else {
                StubReply::Text(format!("you said: {prompt}"))
            }
        }));
        let request = r#"{"model":"m","messages":[{"role":"user","content":"hello"}]}"#;
        let (status, body) = post(&stub, "/v1/chat/completions", request);
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(reply["choices"][0]["message"]["content"], "you said: hello");
        let refused = r#"{"messages":[{"role":"user","content":"refuse this"}]}"#;
        let (status, _) = post(&stub, "/v1/chat/completions", refused);
        assert!(status.starts_with("HTTP/1.1 400"), "{status}");
        let (status, _) = post(&stub, "/v1/embeddings", "{}");
        assert!(status.starts_with("HTTP/1.1 404"), "{status}");
        assert_eq!(stub.requests(), 2);
        assert!(stub.base_url().starts_with("http://127.0.0.1:"));
    }

    #[test]
    fn the_oracle_gives_the_kg_linker_the_gold_plan() {
        let file = "who plays at position Goalkeeper for club Ulsan_Hyundai_FC ?\tKIM\t\
            Goalkeeper#plays_position_inverse#KIM#<end>#KIM*Ulsan_Hyundai_FC#plays_in_club_inverse#KIM#<end>#KIM\n\
            is x_y 's dad a man ?\tmale\tx_y#parents#z#gender#male#<end>#male\n";
        let oracle = oracle(&[file.to_owned()], OracleRoles::ALL);
        let linker = "You link questions to a knowledge graph.\nSchema: ...\nQuestion: \"Is x y's dad a man?\"";
        assert_eq!(
            oracle.reply(linker),
            StubReply::Text(
                "<entities>\nx_y\n</entities>\n<paths>\nparents -> gender\n</paths>".into()
            )
        );
        let conj = "You link questions to a knowledge graph.\nQuestion: who plays at position Goalkeeper for club Ulsan Hyundai FC?";
        assert_eq!(
            oracle.reply(conj),
            StubReply::Text(
                "<entities>\nGoalkeeper\nUlsan_Hyundai_FC\n</entities>\n<paths>\n~plays_position\n~plays_in_club\n</paths>".into()
            )
        );
        assert_eq!(
            oracle.reply("You link questions to a knowledge graph.\nQuestion: unknown?"),
            StubReply::Status(400)
        );
        assert_eq!(
            oracle.reply("Summarize: is x y's dad a man?"),
            StubReply::Status(400)
        );
    }

    #[test]
    fn the_oracle_judge_and_summarizer_read_only_the_facts_they_are_sent() {
        let files = [
            "what films did [Tom Hanks] act in\tBig|Cast Away\n".to_owned(),
            "what is x 's son 's mother ?\tm_a(m_a/m_b/)\tx#children#s#parents#m_a#<end>#m_a\n"
                .to_owned(),
        ];
        let oracle = oracle(&files, OracleRoles::ALL);
        let summarize = |facts: &str| {
            format!(
                "You answer questions from knowledge-graph facts only.\nWrite the answers, \
                 at most 2, each ...\nQuestion: what films did Tom Hanks act in\n\nFacts:\n{facts}"
            )
        };
        // A longer name that contains the answer is not the answer.
        let facts = "E1: Tom Hanks <-[starred_actors]- Big Fish\n\
                     E2: Tom Hanks <-[starred_actors]- Cast Away -[release_year]-> 2000\n\
                     E3: query \"MATCH …\" returned (m): [Big] [Philadelphia]\n";
        assert_eq!(
            oracle.reply(&summarize(facts)),
            StubReply::Text("<answers>\nBig [E3]\nCast Away [E2]\n</answers>".into())
        );
        assert!(matches!(
            oracle.reply(&summarize("E1: Tom Hanks <-[starred_actors]- Big Fish\n")),
            StubReply::Text(text) if text.starts_with("<answers>\n</answers>")
        ));
        let judge = |facts: &str| {
            format!(
                "You check whether retrieved knowledge-graph facts are enough to answer.\n\
                 Question: what is x's son's mother?\n\nFacts:\n{facts}\nFrontier entities:\ns\n"
            )
        };
        let complete = oracle.reply(&judge("E1: x -[children]-> s -[parents]-> m_b\n"));
        assert!(
            matches!(&complete, StubReply::Text(t) if t.contains("<verdict>COMPLETE</verdict>")),
            "{complete:?}"
        );
        let next = oracle.reply(&judge("E1: x -[children]-> s\n"));
        assert!(
            matches!(&next, StubReply::Text(t) if t.contains("<verdict>NEXT_ROUND</verdict>")),
            "{next:?}"
        );
        let plan_only = super::oracle(
            &files,
            OracleRoles::parse("kg-linker").expect("a known role"),
        );
        assert_eq!(
            plan_only.reply(&judge("E1: x -[children]-> s -[parents]-> m_b\n")),
            StubReply::Status(400)
        );
        assert!(OracleRoles::parse("kg-linker,critic").is_err());
    }
}
