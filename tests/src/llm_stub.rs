//! A scripted OpenAI-compatible chat server — test tooling, not a language model.
//!
//! It answers `POST …/chat/completions` on a random loopback port with whatever its
//! [`Script`] says: a fixed text (nonsense, an empty reply), an HTTP error status, or a
//! reply computed from the prompt (an oracle that knows the gold plan). It lets tests and
//! measurements drive kgmesh's model path with a model that is broken in a known way;
//! the real model path is exercised with `scripts/local-llm`.
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

/// The gold plans of question files in the IRN format (PathQuestion, WC2014: `question
/// TAB answers TAB path`, the path `topic#relation#node#…` with `*` between the paths
/// of a conjunctive question and `_inverse` marking a relation followed backwards).
///
/// An oracle KG-Linker: a KG-Linker prompt whose question is in the files gets the gold
/// topic entities and relation paths; every other prompt (judge, summarizer,
/// traverser, an unknown question) gets HTTP 400, so those roles use their LLM-free
/// rules. It measures what the pipeline loses when the plan is right.
pub fn irn_oracle(texts: &[String]) -> Script {
    let mut gold: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for line in texts.iter().flat_map(|text| text.lines()) {
        let columns: Vec<&str> = line.split('\t').collect();
        let (Some(question), Some(path)) = (columns.first(), columns.get(2)) else {
            continue;
        };
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
        if !paths.is_empty() {
            gold.insert(
                question_key(question),
                format!(
                    "<entities>\n{}\n</entities>\n<paths>\n{}\n</paths>",
                    entities.join("\n"),
                    paths.join("\n")
                ),
            );
        }
    }
    Script::computed(move |prompt| {
        if !prompt.contains("You link questions to a knowledge graph") {
            return StubReply::Status(400);
        }
        let asked = prompt
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("Question: "))
            .map(question_key)
            .unwrap_or_default();
        match gold.get(&asked) {
            Some(reply) => StubReply::Text(reply.clone()),
            None => StubReply::Status(400),
        }
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
            match script.reply(&prompt_of(&body)) {
                StubReply::Text(text) => (200, completion(&text)),
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
fn completion(text: &str) -> String {
    let completion_tokens = text.len().div_ceil(4);
    serde_json::json!({
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": "llm-stub",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": completion_tokens,
                  "total_tokens": completion_tokens}
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
    fn the_oracle_gives_the_kg_linker_the_gold_plan_and_refuses_the_rest() {
        let file = "who plays at position Goalkeeper for club Ulsan_Hyundai_FC ?\tKIM\t\
            Goalkeeper#plays_position_inverse#KIM#<end>#KIM*Ulsan_Hyundai_FC#plays_in_club_inverse#KIM#<end>#KIM\n\
            is x_y 's dad a man ?\tmale\tx_y#parents#z#gender#male#<end>#male\n";
        let oracle = irn_oracle(&[file.to_owned()]);
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
}
