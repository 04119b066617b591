//! The web console of `kgmesh serve --embedded`, in a real headless Chromium (Debian's
//! `chromium-headless-shell`, installed by `scripts/setup.d/70-chromium.sh`; another
//! build through `KGMESH_CHROMIUM`). Chromium runs the page's script against the real
//! server, then prints the page as it stands (`--dump-dom`) or takes a screenshot.
//! Screenshots go to `KGMESH_SCREENSHOTS_DIR`, else `target/console-screenshots/`.

mod serve_support;

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
};

use kgmesh_testkit::nats::NatsServer;
use serve_support::*;

/// The Chromium to drive: `KGMESH_CHROMIUM`, else the first of Debian's builds on PATH.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("KGMESH_CHROMIUM") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "no headless Chromium found: run scripts/setup.d/70-chromium.sh (Debian's \
         chromium-headless-shell) or set KGMESH_CHROMIUM to a Chromium binary"
    );
}

/// Chromium with its own profile directory (tests run side by side), no sandbox (CI
/// runs as root), and virtual time: the page's requests and script finish before the
/// page is printed or shot.
fn browser(profile: &Path, width: u32, height: u32) -> Command {
    let mut command = Command::new(chromium());
    command
        .arg("--headless")
        .arg("--no-sandbox")
        .arg("--disable-gpu")
        .arg("--hide-scrollbars")
        .arg("--no-first-run")
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg("--virtual-time-budget=20000");
    command
}

/// The page asking `question`, with the API token `token` handed over in the address's
/// fragment (which the page takes into the tab's storage and removes).
fn page_url(address: SocketAddr, question: &str, token: Option<&str>) -> String {
    let mut url = format!("http://{address}/?q=");
    for byte in question.bytes() {
        if byte.is_ascii_alphanumeric() {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    if let Some(token) = token {
        url.push_str(&format!("#token={token}"));
    }
    url
}

/// The page after its script ran, as Chromium prints it.
fn rendered(address: SocketAddr, question: &str, token: Option<&str>) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut command = browser(profile.path(), 1280, 800);
    command
        .arg("--dump-dom")
        .arg(page_url(address, question, token));
    let (code, dom, stderr) = run(command);
    assert_eq!(code, 0, "chromium failed: {stderr}");
    assert!(dom.contains("</html>"), "no page printed: {dom}\n{stderr}");
    dom
}

fn screenshot(
    address: SocketAddr,
    question: &str,
    token: Option<&str>,
    width: u32,
    height: u32,
    file: &Path,
) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut command = browser(profile.path(), width, height);
    command
        .arg(format!("--screenshot={}", file.display()))
        .arg(page_url(address, question, token));
    let (code, _, stderr) = run(command);
    assert_eq!(code, 0, "chromium failed: {stderr}");
    let png = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} is not a screenshot of a page ({} bytes)",
        file.display(),
        png.len()
    );
}

fn screenshots_dir() -> PathBuf {
    let dir = std::env::var_os("KGMESH_SCREENSHOTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/console-screenshots"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// The opening tag of the first element that carries every one of `needles`.
fn element_with<'a>(dom: &'a str, needles: &[&str]) -> Option<&'a str> {
    dom.split('<')
        .map(|tag| tag.split('>').next().unwrap_or(tag))
        .find(|tag| needles.iter().all(|needle| tag.contains(needle)))
}

#[test]
fn the_console_answers_draws_the_cited_edges_and_shows_errors() {
    // A server with API tokens: the page needs one to ask.
    let command = with_tokens(serve_embedded(&sample_kg(), 2), &admin_tokens());
    let (mut server, address) = start_ready("kgmesh serve", command);
    let token = Some(ADMIN_TOKEN);

    // The page and its assets come from the binary, under a same-origin-only policy.
    let (status, head, page) = http_get_with_head(address, "/");
    assert_eq!(status, 200, "{page}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    for asset in ["/console/console.js", "/console/console.css"] {
        assert!(page.contains(asset), "the page does not load {asset}");
        let (status, body) = http(address, "GET", asset, None);
        assert_eq!(status, 200, "{asset}: {body}");
    }
    assert!(page.contains("the bundled sample movie KG") || page.contains("kg.tsv"));

    // Without a token the page says what is missing instead of answering.
    let dom = rendered(address, "who directed Heat", None);
    let error = dom
        .split(r#"id="error""#)
        .nth(1)
        .unwrap_or_else(|| panic!("no error box:\n{dom}"));
    let (tag_rest, text) = error.split_once('>').expect("the error box closes its tag");
    assert!(!tag_rest.contains("hidden"), "the error is hidden:\n{dom}");
    assert!(
        text.starts_with("This server needs an API token (401): enter it above."),
        "{text}"
    );
    assert!(
        !dom.contains("answer-text"),
        "answered without a token:\n{dom}"
    );
    // A token the server does not know: said so.
    let dom = rendered(
        address,
        "who directed Heat",
        Some("not-a-known-token-123456"),
    );
    assert!(
        dom.contains("The server does not accept this API token (401)"),
        "{dom}"
    );

    // A question asked through the page, with the token.
    let dom = rendered(address, "who directed Heat", token);
    assert!(
        !dom.contains(ADMIN_TOKEN),
        "the token is shown on the page:\n{dom}"
    );
    assert!(dom.contains("token set for this tab"), "{dom}");
    assert!(
        dom.contains(r#"<span class="answer-text">Michael Mann</span>"#),
        "the answer is not on the page:\n{dom}"
    );
    // The reply's confidence is shown above the answers, as the chance they are right.
    let confidence = element_with(&dom, &[r#"id="confidence""#])
        .unwrap_or_else(|| panic!("no confidence on the page:\n{dom}"));
    assert!(
        !confidence.contains("hidden"),
        "the confidence is hidden: {confidence}"
    );
    assert!(
        dom.contains("the estimated chance that this answer is right")
            || dom.contains("this answer is more likely wrong than right"),
        "the confidence is not said in words:\n{dom}"
    );
    assert!(
        !dom.contains("A second reading of the question reaches other answers"),
        "{dom}"
    );
    // The graph view drew the cited edge between the question's entity and the answer,
    // and says which retrievers found it.
    let heat = element_with(&dom, &[r#"class="node topic""#, r#"data-name="Heat""#])
        .unwrap_or_else(|| panic!("Heat is not drawn as the question's entity:\n{dom}"));
    let mann = element_with(
        &dom,
        &[r#"class="node answer""#, r#"data-name="Michael Mann""#],
    )
    .unwrap_or_else(|| panic!("Michael Mann is not drawn as the answer:\n{dom}"));
    let id = |tag: &str| {
        tag.split(r#"data-id=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a node has an id")
            .to_owned()
    };
    let edge = element_with(
        &dom,
        &[
            r#"class="edge cited""#,
            r#"data-relation="directed_by""#,
            &format!(r#"data-head="{}""#, id(heat)),
            &format!(r#"data-tail="{}""#, id(mann)),
        ],
    )
    .unwrap_or_else(|| panic!("no cited directed_by edge from Heat to Michael Mann:\n{dom}"));
    assert!(edge.contains("data-sources=\""), "{edge}");
    assert!(
        dom.contains("<line "),
        "the edges are not drawn as lines:\n{dom}"
    );
    // The question's life: the role calls, and the roles and schema panels.
    for role in ["kg-linker", "summarizer", "path-follower"] {
        assert!(
            dom.contains(&format!("<td>{role}</td>")),
            "{role} is missing from the page:\n{dom}"
        );
    }
    assert!(
        dom.contains(" nodes, ") && dom.contains(" relations, "),
        "{dom}"
    );
    assert!(dom.contains("<code>directed_by</code>"), "schema: {dom}");
    // The example question is the graph's own (a relation and an entity it has, as
    // `/v1/schema` offers it), not a fixed one.
    let (status, body) = http_as(address, ADMIN_TOKEN, "GET", "/v1/schema", None);
    assert_eq!(status, 200, "{body}");
    let schema: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let example = schema["example_question"]
        .as_str()
        .expect("an example question");
    let textarea = element_with(&dom, &[r#"id="question""#]).expect("the question box");
    assert!(
        textarea.contains(&format!(r#"placeholder="e.g. {example}""#)),
        "{textarea}"
    );
    // No error box on a good answer.
    assert!(
        element_with(&dom, &[r#"id="error""#, "hidden"]).is_some(),
        "an error is shown:\n{dom}"
    );

    // "what is Heat": the learned reader's own reading of the question reaches other
    // answers than the one given, and the page says so beside the confidence.
    let dom = rendered(address, "what is Heat", token);
    let said = dom
        .split(r#"id="confidence""#)
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("no confidence on the page:\n{dom}"));
    assert!(
        said.contains("A second reading of the question reaches other answers"),
        "{said}"
    );

    // A question the server refuses (too long): its reason is shown, not a broken page.
    let dom = rendered(address, &"why?".repeat(600), token);
    let error = dom
        .split(r#"id="error""#)
        .nth(1)
        .unwrap_or_else(|| panic!("no error box:\n{dom}"));
    let (tag_rest, text) = error.split_once('>').expect("the error box closes its tag");
    assert!(!tag_rest.contains("hidden"), "the error is hidden:\n{dom}");
    assert!(
        text.starts_with("The question was refused (400 invalid_question):")
            && text.contains("the question has 2400 characters"),
        "{text}"
    );

    // Screenshots at desktop and phone sizes, for people to look at.
    let dir = screenshots_dir();
    let question = "who starred in the films directed by Michael Mann";
    screenshot(
        address,
        question,
        token,
        1280,
        800,
        &dir.join("console-desktop.png"),
    );
    screenshot(
        address,
        question,
        token,
        390,
        844,
        &dir.join("console-phone.png"),
    );

    assert!(server.is_running(), "the server died");
    server.terminate();
}

#[test]
fn the_console_shows_a_documents_passage_under_its_file_and_offset() {
    // A one-file corpus indexed by the binary, served beside the sample graph.
    let corpus = tempfile::tempdir().expect("corpus dir");
    let file = corpus.path().join("engines.md");
    std::fs::write(
        &file,
        "# The Sparrow engine\n\nThe Sparrow engine first flew in 1994.\nIts designer was \
         Omar Haddad, chief engineer at Brannock Aero.\n",
    )
    .expect("write the corpus");
    let index = tempfile::tempdir().expect("index dir");
    let mut build = kgmesh();
    build
        .env("KGMESH__EMBEDDER__KIND", "none")
        .args(["index", "--no-vectors", "--text"])
        .arg(corpus.path())
        .arg("--into")
        .arg(format!("embedded:{}", index.path().display()));
    let (code, out, err) = run(build);
    assert_eq!(code, 0, "index failed: {out}{err}");
    let mut command = with_tokens(serve_embedded(&sample_kg(), 2), &admin_tokens());
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .arg("--text-index")
        .arg(index.path());
    let (mut server, address) = start_ready("kgmesh serve", command);
    let dom = rendered(
        address,
        "who designed the Sparrow engine",
        Some(ADMIN_TOKEN),
    );
    server.terminate();
    // The answer, read from the passage, and the passage as a quotation under its source.
    assert!(
        dom.contains("Omar Haddad"),
        "no answer from the document:\n{dom}"
    );
    element_with(&dom, &["li ", r#"class="passage"#])
        .unwrap_or_else(|| panic!("no passage item on the page:\n{dom}"));
    let cite_at = dom
        .find(r#"class="passage-source""#)
        .unwrap_or_else(|| panic!("no passage source:\n{dom}"));
    let cite = &dom[cite_at
        ..dom[cite_at..]
            .find("</cite>")
            .map_or(dom.len(), |e| cite_at + e)];
    assert!(
        cite.contains("engines.md:"),
        "the source is not the file and offset: {cite}"
    );
    let quote_at = dom
        .find(r#"class="passage-text""#)
        .unwrap_or_else(|| panic!("no passage text:\n{dom}"));
    assert!(
        dom[quote_at..].contains("first flew in 1994.\nIts designer"),
        "the passage lost its line break or text:\n{}",
        &dom[quote_at..]
    );
}

#[test]
fn the_console_can_be_turned_off() {
    let mut command = serve_embedded(&sample_kg(), 1);
    command.env("KGMESH__HTTP__CONSOLE", "false");
    let (mut server, address) = start_ready("kgmesh serve", command);
    let (status, body) = http(address, "GET", "/", None);
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not_found"), "{body}");
    let (status, _) = http(address, "GET", "/console/console.js", None);
    assert_eq!(status, 404);
    // The API itself is unchanged.
    let (status, body) = http(address, "GET", "/v1/schema", None);
    assert_eq!(status, 200, "{body}");
    server.terminate();
}

/// Behind NATS every role counts its calls: the roles table shows all four columns in
/// the side panel's width (role names wrap, numbers do not), at desktop and phone size.
#[test]
fn the_roles_table_keeps_its_calls_column_in_view() {
    let nats = NatsServer::start();
    let roles = [
        "kg-linker",
        "entity-linker",
        "path-follower",
        "scoring-retriever",
        "query-executor",
        "judge",
        "summarizer",
    ];
    let kg = sample_kg();
    let mut agents = spawn_agents(&nats.url(), &roles, &kg, |command| command);
    let (mut server, address) = spawn_serve_nats(&nats.url(), |command| command);
    wait_for_roles(address, &roles, &mut agents);
    // A question asked, then the roles' counts as discovery reports them (they lag a
    // discovery behind).
    let body = serde_json::json!({ "question": "who directed Heat" }).to_string();
    let (status, reply) = http(address, "POST", "/v1/ask", Some(&body));
    assert_eq!(status, 200, "{reply}");
    let deadline = std::time::Instant::now() + STEP_TIMEOUT;
    loop {
        let (_, body) = http(address, "GET", "/v1/agents", None);
        let agents: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let counted = agents["roles"]
            .as_array()
            .expect("roles")
            .iter()
            .any(|role| role["requests"].as_u64().unwrap_or(0) > 0);
        if counted {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no role counts a request: {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let dom = rendered(address, "who directed Heat", None);
    assert!(
        dom.contains(r#"<span class="answer-text">Michael Mann</span>"#),
        "{dom}"
    );
    // The calls were counted, so the column is shown (not `uncounted`).
    let table = element_with(&dom, &[r#"id="agents""#]).expect("the roles table");
    assert!(!table.contains("uncounted"), "{table}");
    assert!(dom.contains(r#"class="num calls""#), "{dom}");
    let dir = screenshots_dir();
    screenshot(
        address,
        "who directed Heat",
        None,
        1280,
        800,
        &dir.join("console-roles-desktop.png"),
    );
    screenshot(
        address,
        "who directed Heat",
        None,
        390,
        1800,
        &dir.join("console-roles-phone.png"),
    );
    server.terminate();
    for agent in &mut agents {
        agent.terminate();
    }
}
