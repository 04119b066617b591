//! A small in-process OpenAI-compatible HTTP server that replays scripted responses, so
//! the client's retries, timeouts and parsing are tested against real HTTP.

#![allow(dead_code)]

use std::{
    collections::VecDeque,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpListener, task::JoinHandle};

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Step {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering (to trip the client's timeout).
    pub delay: Duration,
}

impl Step {
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "text/html".into())],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// A chat completion with the given text and (optionally) usage.
    pub fn completion(text: &str, usage: Option<(u64, u64)>) -> Self {
        let mut body = serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "replay-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}]
        });
        if let Some((prompt, completion)) = usage {
            body["usage"] = serde_json::json!({
                "prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion});
        }
        Self::json(200, body)
    }
}

/// What the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub body: serde_json::Value,
}

/// Serves the steps in order (the last one repeats); stops when dropped.
pub struct ReplayServer {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    /// (in flight now, most ever in flight at once)
    in_flight: Arc<Mutex<(usize, usize)>>,
    task: JoinHandle<()>,
}

impl ReplayServer {
    pub async fn start(steps: Vec<Step>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a random port");
        let addr = listener.local_addr().expect("local addr");
        let script = Arc::new(Mutex::new(VecDeque::from(steps)));
        let received = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(Mutex::new((0usize, 0usize)));
        let task = {
            let received = received.clone();
            let in_flight = in_flight.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        break;
                    };
                    let script = script.clone();
                    let received = received.clone();
                    let in_flight = in_flight.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request: Request<Incoming>| {
                            let script = script.clone();
                            let received = received.clone();
                            let in_flight = in_flight.clone();
                            async move {
                                {
                                    let mut counts = in_flight.lock().unwrap();
                                    counts.0 += 1;
                                    counts.1 = counts.1.max(counts.0);
                                }
                                let response = answer(request, script, received).await;
                                in_flight.lock().unwrap().0 -= 1;
                                Ok::<_, Infallible>(response)
                            }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        };
        Self {
            addr,
            received,
            in_flight,
            task,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn max_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    request: Request<Incoming>,
    script: Arc<Mutex<VecDeque<Step>>>,
    received: Arc<Mutex<Vec<Received>>>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    received.lock().unwrap().push(Received {
        path,
        authorization,
        body,
    });
    let step = {
        let mut script = script.lock().unwrap();
        if script.len() > 1 {
            script.pop_front()
        } else {
            script.front().cloned()
        }
    }
    .unwrap_or_else(|| Step::raw(500, "replay script is empty"));
    if !step.delay.is_zero() {
        tokio::time::sleep(step.delay).await;
    }
    let mut response = Response::builder().status(step.status);
    for (name, value) in &step.headers {
        response = response.header(name, value);
    }
    response
        .body(Full::new(Bytes::from(step.body)))
        .expect("valid scripted response")
}

/// Every await in a test gets a limit.
pub async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("test step took over 20 s")
}
