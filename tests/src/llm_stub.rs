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
}
