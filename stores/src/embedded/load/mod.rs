//! Loaders: read a KG from files into an [`EmbeddedGraph`].
//!
//! Formats ([`KgFormat`]): triples as TSV (`head<TAB>relation<TAB>tail`, also the format of
//! the bundled `kb.tsv` files), CSV (`head,relation,tail`, RFC 4180 quoting), MetaQA's
//! `head|relation|tail`, N-Triples, property-graph CSV directories described by a TOML
//! mapping ([`mapping::Mapping`]), and the store's own snapshots. [`detect_format`]
//! guesses from the extension and the first line; callers can override it.
//!
//! Bad input never vanishes: every malformed line is counted and reported with
//! `file:line` and a reason ([`LoadReport::bad_lines`]); the first
//! [`LoadOptions::max_reported_bad_lines`] are also printed on stderr as they are met.
//! Loading stops at the first bad line only in strict mode.

mod mapping;
mod ntriples;
mod triples;

use std::{
    fmt,
    io::Read,
    path::{Path, PathBuf},
    str::FromStr,
    time::{Duration, Instant},
};

pub use mapping::{EndpointMapping, Mapping, NodeMapping, PropertyType, RelationshipMapping};

use super::{EmbeddedGraph, GraphBuilder};
use crate::{StoreError, StoreResult};

/// Name of the mapping file looked for inside a property-graph CSV directory.
pub const DEFAULT_MAPPING_FILE: &str = "kgmesh-mapping.toml";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KgFormat {
    /// `head<TAB>relation<TAB>tail` per line.
    Tsv,
    /// `head,relation,tail` per record (an optional header row is recognised).
    Csv,
    /// MetaQA's `head|relation|tail`.
    Pipe,
    /// W3C N-Triples.
    NTriples,
    /// A directory of CSV files plus a TOML mapping.
    PropertyCsv,
    /// A snapshot written by [`crate::embedded::snapshot::save`].
    Snapshot,
}

impl KgFormat {
    pub const NAMES: &'static [&'static str] =
        &["tsv", "csv", "pipe", "ntriples", "pgcsv", "snapshot"];

    pub fn name(self) -> &'static str {
        match self {
            KgFormat::Tsv => "tsv",
            KgFormat::Csv => "csv",
            KgFormat::Pipe => "pipe",
            KgFormat::NTriples => "ntriples",
            KgFormat::PropertyCsv => "pgcsv",
            KgFormat::Snapshot => "snapshot",
        }
    }
}

impl fmt::Display for KgFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KgFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "tsv" | "tab" => Ok(KgFormat::Tsv),
            "csv" => Ok(KgFormat::Csv),
            "pipe" | "metaqa" => Ok(KgFormat::Pipe),
            "ntriples" | "nt" | "n-triples" => Ok(KgFormat::NTriples),
            "pgcsv" | "property-csv" | "csv-dir" => Ok(KgFormat::PropertyCsv),
            "snapshot" | "kgs" => Ok(KgFormat::Snapshot),
            other => Err(format!(
                "unknown KG format `{other}` (expected one of: {})",
                KgFormat::NAMES.join(", ")
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// `None`: detect from the path.
    pub format: Option<KgFormat>,
    /// Mapping for property-graph CSV; `None`: `DIR/kgmesh-mapping.toml`.
    pub mapping: Option<PathBuf>,
    /// Stop at the first bad line (with an error naming it).
    pub strict: bool,
    /// Print progress lines on stderr.
    pub progress: bool,
    /// Print a progress line at least every this many lines …
    pub progress_every_lines: u64,
    /// … or every this long, whichever comes first.
    pub progress_every: Duration,
    /// Bad lines printed on stderr and kept in the report (all are counted).
    pub max_reported_bad_lines: usize,
    /// What an N-Triples literal object becomes.
    pub literals: LiteralMode,
    /// A file more than this share of whose lines are bad is refused (it is most likely
    /// not a KG, or not in the format it was read as); `1.0` accepts any.
    pub max_bad_share: f64,
    /// Whether a triple file (TSV, CSV, pipe) starts with a header row.
    pub header: HeaderMode,
}

/// Whether the first row of a triple file (TSV, CSV, pipe) is a header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HeaderMode {
    /// Decided per file: the usual column names (`head,relation,tail`,
    /// `subject,predicate,object`, …), or a first row whose relation and names appear
    /// in none of the rows after it while theirs repeat. Each row read as a header is
    /// named in the load report.
    #[default]
    Auto,
    /// The first row is a header.
    Present,
    /// The first row is a triple.
    Absent,
}

impl FromStr for HeaderMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "auto" => Ok(HeaderMode::Auto),
            "yes" | "true" | "present" => Ok(HeaderMode::Present),
            "no" | "false" | "absent" => Ok(HeaderMode::Absent),
            other => Err(format!(
                "unknown header setting `{other}` (expected auto, yes or no)"
            )),
        }
    }
}

/// A first row that was read as a header, not loaded as a triple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderRow {
    pub file: PathBuf,
    pub fields: Vec<String>,
    /// Why it was taken for a header.
    pub why: String,
}

impl fmt::Display for HeaderRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: the first row ({}) was read as a header, not a triple: {}",
            self.file.display(),
            self.fields.join(", "),
            self.why
        )
    }
}

/// What an N-Triples literal object (`"1995"^^xsd:gYear`, `"Heat"@en`) becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LiteralMode {
    /// A node named by the literal's lexical form, reached by an edge named by the
    /// predicate. The default: the retrieval roles walk edges (neighbours, metapaths,
    /// shortest paths), so a year or a title held as a property would only be reachable
    /// through Cypher, and KG-QA answers are very often such values.
    #[default]
    Nodes,
    /// A property of the subject keyed by the predicate IRI, typed from the datatype
    /// (`xsd:integer` family → integer, `xsd:decimal`/`double`/`float` → float,
    /// `xsd:boolean` → boolean, anything else or an ill-typed form → string; language
    /// tags are dropped). A predicate with several literals on one subject gives a
    /// list, in file order. Fits property-graph use through Cypher; no literal nodes.
    Properties,
}

impl FromStr for LiteralMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "nodes" | "node" => Ok(LiteralMode::Nodes),
            "properties" | "property" | "props" => Ok(LiteralMode::Properties),
            other => Err(format!(
                "unknown literal mode `{other}` (expected nodes or properties)"
            )),
        }
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            format: None,
            mapping: None,
            strict: false,
            progress: false,
            progress_every_lines: 1_000_000,
            progress_every: Duration::from_secs(2),
            max_reported_bad_lines: 100,
            literals: LiteralMode::default(),
            max_bad_share: 0.5,
            header: HeaderMode::Auto,
        }
    }
}

/// A line that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub file: String,
    pub line: u64,
    pub reason: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.reason)
    }
}

/// What a load read and what it could not.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    pub format: KgFormat,
    pub files: Vec<PathBuf>,
    pub lines: u64,
    pub bytes: u64,
    /// Every bad line, counted.
    pub bad_line_count: u64,
    /// The first `max_reported_bad_lines` of them.
    pub bad_lines: Vec<BadLine>,
    /// Lines loaded after a repair the input's mapping asked for.
    pub repaired_line_count: u64,
    /// First rows read as headers rather than triples (see [`HeaderMode`]).
    pub headers: Vec<HeaderRow>,
    pub elapsed: Duration,
}

/// Guesses a KG's format: a directory is property-graph CSV; a file is recognised by its
/// first bytes (snapshot magic, an N-Triples term) and then by extension or separator.
pub fn detect_format(path: &Path) -> StoreResult<KgFormat> {
    let metadata = std::fs::metadata(path).map_err(|error| io_error(path, error))?;
    if metadata.is_dir() {
        return Ok(KgFormat::PropertyCsv);
    }
    let mut head = vec![0u8; 4096];
    let mut file = std::fs::File::open(path).map_err(|error| io_error(path, error))?;
    let read = file
        .read(&mut head)
        .map_err(|error| io_error(path, error))?;
    head.truncate(read);
    if head.starts_with(super::snapshot::MAGIC) {
        return Ok(KgFormat::Snapshot);
    }
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match extension.as_str() {
        "nt" => return Ok(KgFormat::NTriples),
        "kgs" => return Ok(KgFormat::Snapshot),
        _ => {}
    }
    let text = String::from_utf8_lossy(&head);
    let first_line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .unwrap_or("");
    if (first_line.starts_with('<') || first_line.starts_with("_:")) && first_line.ends_with('.') {
        return Ok(KgFormat::NTriples);
    }
    if first_line.contains('\t') {
        return Ok(KgFormat::Tsv);
    }
    match extension.as_str() {
        "tsv" => return Ok(KgFormat::Tsv),
        "csv" => return Ok(KgFormat::Csv),
        _ => {}
    }
    if first_line.matches('|').count() >= 2 {
        return Ok(KgFormat::Pipe);
    }
    if first_line.contains(',') {
        return Ok(KgFormat::Csv);
    }
    Err(StoreError::Unusable {
        path: path.display().to_string(),
        detail: format!(
            "its first line has no tab, comma, `|` or N-Triples term, and `.{extension}` names \
             no KG format. Triples go one per line as `subject<TAB>relation<TAB>object` \
             (.tsv), `subject,relation,object` (.csv) or N-Triples (.nt); `kgmesh load \
             --format F` reads a file whose name says otherwise (F: {})",
            KgFormat::NAMES.join(", ")
        ),
    })
}

/// Loads a KG file or directory into an [`EmbeddedGraph`].
pub fn load_graph(path: &Path, options: &LoadOptions) -> StoreResult<(EmbeddedGraph, LoadReport)> {
    let started = Instant::now();
    let format = match options.format {
        Some(format) => format,
        None => detect_format(path)?,
    };
    if let (Some(mapping), false) = (&options.mapping, format == KgFormat::PropertyCsv) {
        return Err(StoreError::Unusable {
            path: path.display().to_string(),
            detail: format!(
                "a mapping ({}) was given, but this is a {format} file, not a folder of CSV \
                 files; a mapping says which CSV file of a folder holds which nodes and \
                 relationships. Drop --mapping (and graph.mapping) for a file of triples",
                mapping.display()
            ),
        });
    }
    let mut sink = LoadSink::new(options);
    let builder = match format {
        KgFormat::Snapshot => {
            let graph = super::snapshot::open(path)?;
            let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            let report = LoadReport {
                format,
                files: vec![path.to_path_buf()],
                lines: 0,
                bytes,
                bad_line_count: 0,
                bad_lines: Vec::new(),
                repaired_line_count: 0,
                headers: Vec::new(),
                elapsed: started.elapsed(),
            };
            return Ok((graph, report));
        }
        KgFormat::Tsv | KgFormat::Pipe => {
            let mut builder = GraphBuilder::new();
            let separator = if format == KgFormat::Tsv { b'\t' } else { b'|' };
            triples::load_separated(path, separator, &mut builder, &mut sink)?;
            builder
        }
        KgFormat::Csv => {
            let mut builder = GraphBuilder::new();
            triples::load_csv(path, &mut builder, &mut sink)?;
            builder
        }
        KgFormat::NTriples => {
            let mut builder = GraphBuilder::new();
            ntriples::load(path, options.literals, &mut builder, &mut sink)?;
            builder
        }
        KgFormat::PropertyCsv => {
            let mapping_path = options
                .mapping
                .clone()
                .unwrap_or_else(|| path.join(DEFAULT_MAPPING_FILE));
            if !mapping_path.is_file() {
                return Err(StoreError::Io {
                    path: mapping_path.display().to_string(),
                    detail: format!(
                        "no such mapping file. {} is a directory of CSV files, a property \
                         graph, and a TOML mapping says which file holds which nodes and \
                         relationships: pass --mapping FILE or put {DEFAULT_MAPPING_FILE} in \
                         the directory (docs/property-graphs.md; stores/examples/northwind.toml \
                         maps Northwind)",
                        path.display()
                    ),
                });
            }
            let mapping = Mapping::from_file(&mapping_path)?;
            let mut builder = GraphBuilder::new();
            mapping::load(path, &mapping, &mut builder, &mut sink)?;
            builder
        }
    };
    sink.note("building the graph (sorting edges, indexing names)");
    let graph = builder.finish();
    let report = sink.into_report(format, started.elapsed());
    check_usable(path, &graph, &report, options)?;
    Ok((graph, report))
}

/// Refuses a load that read no node, or mostly bad lines: what was read is most likely
/// not a KG (a questions file, a header-only CSV) and answering from it would only say
/// "I don't know" to everything.
fn check_usable(
    path: &Path,
    graph: &EmbeddedGraph,
    report: &LoadReport,
    options: &LoadOptions,
) -> StoreResult<()> {
    let first_bad = report
        .bad_lines
        .first()
        .map(|bad| format!("; the first bad line: {bad}"))
        .unwrap_or_default();
    let relations = graph.relation_count() as u64;
    let triple_format = matches!(
        report.format,
        KgFormat::Tsv | KgFormat::Csv | KgFormat::Pipe | KgFormat::NTriples
    );
    let problem = if report.lines == 0 && graph.node_count() == 0 {
        Some("it is empty".to_owned())
    } else if graph.node_count() == 0 {
        Some(format!(
            "no triple could be read from {} line(s) ({} bad{first_bad})",
            report.lines, report.bad_line_count
        ))
    } else if triple_format && report.lines >= 20 && relations * 5 >= report.lines * 4 {
        // A KG names few relations, each used many times; a table of records (a
        // questions file: id, question, answer) has a different "relation" on every line.
        let example = graph
            .relations()
            .next()
            .map(|(_, name)| format!(" (e.g. \"{name}\")"))
            .unwrap_or_default();
        Some(format!(
            "its {} lines name {relations} different relations in the middle column{example}, \
             which a KG does not: it looks like a table of records, such as a questions file \
             (questions go to `kgmesh ask` or `kgmesh eval --questions`)",
            report.lines
        ))
    } else if report.bad_line_count as f64 > options.max_bad_share * report.lines.max(1) as f64 {
        Some(format!(
            "{} of {} lines are bad, more than the {:.0} % accepted{first_bad}",
            report.bad_line_count,
            report.lines,
            100.0 * options.max_bad_share
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(detail) => Err(StoreError::Corrupt {
            path: path.display().to_string(),
            detail: format!("{detail}. Is it a KG in the {} format?", report.format),
        }),
    }
}

/// Collects progress and bad lines while files are read.
pub(crate) struct LoadSink<'o> {
    options: &'o LoadOptions,
    files: Vec<PathBuf>,
    lines: u64,
    bytes: u64,
    bad_line_count: u64,
    bad_lines: Vec<BadLine>,
    repaired_line_count: u64,
    headers: Vec<HeaderRow>,
    started: Instant,
    last_print: Instant,
    last_print_lines: u64,
    /// Lines that were not UTF-8: said once, with the encoding they look like and the fix.
    not_utf8_lines: u64,
}

impl<'o> LoadSink<'o> {
    fn new(options: &'o LoadOptions) -> Self {
        let now = Instant::now();
        Self {
            options,
            files: Vec::new(),
            lines: 0,
            bytes: 0,
            bad_line_count: 0,
            bad_lines: Vec::new(),
            repaired_line_count: 0,
            headers: Vec::new(),
            started: now,
            last_print: now,
            last_print_lines: 0,
            not_utf8_lines: 0,
        }
    }

    /// A line that is not UTF-8: the first one is reported with what the file's encoding
    /// looks like and how to convert it; the others are counted as bad lines without a
    /// line each, since one reason explains them all.
    pub(crate) fn not_utf8(&mut self, file: &Path, line: u64, bytes: &[u8]) -> StoreResult<()> {
        self.not_utf8_lines += 1;
        if self.not_utf8_lines > 1 {
            self.bad_line_count += 1;
            return Ok(());
        }
        self.bad(file, line, encoding_hint(file, bytes))
    }

    pub(crate) fn start_file(&mut self, path: &Path) {
        self.files.push(path.to_path_buf());
        if self.options.progress {
            eprintln!("reading {}", path.display());
        }
    }

    /// Counts one line of `bytes` bytes and prints progress when due.
    pub(crate) fn line(&mut self, bytes: usize) {
        self.lines += 1;
        self.bytes += bytes as u64;
        if !self.options.progress || self.lines & 0x3fff != 0 {
            return;
        }
        let due_by_lines = self.lines - self.last_print_lines >= self.options.progress_every_lines;
        if due_by_lines || self.last_print.elapsed() >= self.options.progress_every {
            self.print_progress();
        }
    }

    fn print_progress(&mut self) {
        let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
        eprintln!(
            "  {:>12} lines  {:>9.1} MB  {:>8.0} lines/s  {:>6.1} MB/s  {} bad",
            self.lines,
            self.bytes as f64 / 1e6,
            self.lines as f64 / seconds,
            self.bytes as f64 / 1e6 / seconds,
            self.bad_line_count
        );
        self.last_print = Instant::now();
        self.last_print_lines = self.lines;
    }

    pub(crate) fn note(&self, message: &str) {
        if self.options.progress {
            eprintln!("{message}");
        }
    }

    /// How the files' first rows are to be read.
    pub(crate) fn header_mode(&self) -> HeaderMode {
        self.options.header
    }

    /// Records a first row read as a header.
    pub(crate) fn header(&mut self, file: &Path, fields: Vec<String>, why: String) {
        let row = HeaderRow {
            file: file.to_path_buf(),
            fields,
            why,
        };
        self.note(&row.to_string());
        self.headers.push(row);
    }

    pub(crate) fn repaired(&mut self) {
        self.repaired_line_count += 1;
    }

    /// Records a bad line; in strict mode returns the error that stops the load.
    pub(crate) fn bad(
        &mut self,
        file: &Path,
        line: u64,
        reason: impl Into<String>,
    ) -> StoreResult<()> {
        let bad = BadLine {
            file: file.display().to_string(),
            line,
            reason: reason.into(),
        };
        self.bad_line_count += 1;
        if self.options.strict {
            return Err(StoreError::Corrupt {
                path: format!("{}:{}", bad.file, bad.line),
                detail: format!("{} (strict mode stops at the first bad line)", bad.reason),
            });
        }
        if self.bad_lines.len() < self.options.max_reported_bad_lines {
            eprintln!("bad line {bad}");
            self.bad_lines.push(bad);
            if self.bad_lines.len() == self.options.max_reported_bad_lines {
                eprintln!("further bad lines are counted but not printed");
            }
        }
        Ok(())
    }

    fn into_report(mut self, format: KgFormat, elapsed: Duration) -> LoadReport {
        if self.not_utf8_lines > 1 {
            eprintln!(
                "{} lines in all were not UTF-8 and were skipped (the reason is given once, above)",
                self.not_utf8_lines
            );
        }
        if self.options.progress {
            self.print_progress();
        }
        LoadReport {
            format,
            files: self.files,
            lines: self.lines,
            bytes: self.bytes,
            bad_line_count: self.bad_line_count,
            bad_lines: self.bad_lines,
            repaired_line_count: self.repaired_line_count,
            headers: self.headers,
            elapsed,
        }
    }
}

pub(crate) fn io_error(path: &Path, error: impl fmt::Display) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}

/// Why a line is not UTF-8, in words a user can act on: the first bad byte, the encoding
/// the bytes look like (UTF-16 by its byte-order mark or zero bytes; otherwise a
/// single-byte Latin-1 / Windows-1252 file, the usual case), and the command that
/// converts the file.
fn encoding_hint(file: &Path, bytes: &[u8]) -> String {
    let position = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(error) => error.valid_up_to(),
    };
    let shown = |at: usize| {
        bytes
            .get(at)
            .map(|byte| {
                format!(
                    " (byte 0x{byte:02X} after \"{}\")",
                    String::from_utf8_lossy(&bytes[at.saturating_sub(24)..at])
                )
            })
            .unwrap_or_default()
    };
    let utf16 = bytes.starts_with(&[0xFF, 0xFE])
        || bytes.starts_with(&[0xFE, 0xFF])
        || bytes.iter().filter(|&&b| b == 0).count() * 4 >= bytes.len().max(1);
    let (looks, from) = if utf16 {
        ("UTF-16", "utf-16")
    } else {
        ("Latin-1 / Windows-1252", "windows-1252")
    };
    format!(
        "not valid UTF-8{}: the file looks {looks}-encoded. kgmesh reads UTF-8; convert it \
         first, e.g. `iconv -f {from} -t utf-8 {} > {}.utf8`",
        shown(position),
        file.display(),
        file.display()
    )
}

#[cfg(test)]
mod tests;
