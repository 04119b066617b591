//! The web console of `kgmesh serve`: one page at `/` with its script and style sheet,
//! all compiled into the binary (no CDN, no front-end dependencies, works offline).
//! The page asks `POST /v1/ask` and draws the reply: answers with the evidence they
//! cite, the cited edges as a graph, the question's life (rounds, role calls, costs,
//! flags, trace), the roles on the bus (`GET /v1/agents`) and the graph's schema
//! (`GET /v1/schema`).
//!
//! The assets are served with a content security policy that allows scripts, styles
//! and requests from the same origin only, so nothing an answer or a graph name holds
//! can run as code.

use actix_web::HttpResponse;
use serde::Serialize;

/// Where the page loads its script and style sheet from.
pub const SCRIPT_PATH: &str = "/console/console.js";
pub const STYLE_PATH: &str = "/console/console.css";

const PAGE: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/console.js");
const STYLE: &str = include_str!("console/console.css");

/// Where the page's settings go (inside a `<script type="application/json">`).
const SETTINGS_MARK: &str = "{\"settings\":null}";

const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// What the page needs to know about the server it is served by.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConsoleSettings {
    /// Jaeger's web UI: each answer's trace id links to `<url>/trace/<id>`.
    pub jaeger_ui_url: Option<String>,
    /// Longest question the server accepts, in characters.
    pub max_question_chars: usize,
    /// The graph the server answers from, when it knows it.
    pub graph: Option<String>,
    /// The kgmesh version.
    pub version: String,
}

/// The rendered page, settings included.
#[derive(Debug, Clone)]
pub struct Console {
    page: String,
}

impl Console {
    pub fn new(settings: &ConsoleSettings) -> Self {
        let json = serde_json::to_string(settings).unwrap_or_else(|_| "{}".to_owned());
        // Inside a <script> element nothing may close it: `<` never appears raw.
        let json = json
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026");
        Self {
            page: PAGE.replacen(SETTINGS_MARK, &json, 1),
        }
    }

    pub fn page(&self) -> HttpResponse {
        asset("text/html; charset=utf-8", self.page.clone())
    }
}

pub fn script() -> HttpResponse {
    asset("text/javascript; charset=utf-8", SCRIPT.to_owned())
}

pub fn style() -> HttpResponse {
    asset("text/css; charset=utf-8", STYLE.to_owned())
}

fn asset(content_type: &str, body: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .insert_header(("Cache-Control", "no-cache"))
        .body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_cannot_close_the_script_element_they_sit_in() {
        let console = Console::new(&ConsoleSettings {
            graph: Some("</script><script>alert(1)</script>".to_owned()),
            ..ConsoleSettings::default()
        });
        assert!(
            !console.page.contains(SETTINGS_MARK),
            "settings were placed"
        );
        assert!(!console.page.contains("<script>alert"), "{}", console.page);
        assert!(console.page.contains("\\u003c/script\\u003e"));
        // The page still names its script and style sheet.
        assert!(console.page.contains(SCRIPT_PATH) && console.page.contains(STYLE_PATH));
    }
}
