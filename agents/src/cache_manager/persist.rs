//! Where the plan cache survives restarts. In embedded mode a JSON-lines log file; in
//! distributed mode NATS JetStream KV (one key per entry, so concurrent writers never
//! overwrite each other's entries).
//!
//! Beside the plans each store keeps their audit and the verdicts held for
//! confirmation ([`super::audit`]): in embedded mode the files `<cache>.audit.jsonl`
//! (append-only, synced like the plans' log) and `<cache>.pending.json` (replaced
//! whole, atomically) next to the cache file; in distributed mode the JetStream
//! stream `<bucket>-audit` (subject `kgmesh-audit.<bucket>`) and the KV bucket
//! `<bucket>-pending`.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    sync::Arc,
};

use async_trait::async_trait;
use kgmesh_schemas::messages::cache::CacheEntry;
use serde::{Deserialize, Serialize};

use super::audit::{AuditEntry, HeldVerdicts};

/// Audit entries a history read scans at most, newest first.
const HISTORY_SCAN: u64 = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("plan cache file {path}: {detail}")]
    Io { path: String, detail: String },
    #[error("plan cache store: {0}")]
    Remote(String),
}

/// Keys of grounded Cypher plans start with this; every other key holds a relation-path
/// plan. One store holds both kinds, so that a cluster shares them through one bucket,
/// but each kind has its own reader: the cache manager reads relation-path plans
/// ([`PlanStore::load_all`]), the query executor grounded Cypher plans
/// ([`PlanStore::load_cypher`]).
pub const CYPHER_KEY_PREFIX: &str = "cypher.";

/// Whether `key` holds a grounded Cypher plan rather than a relation-path plan.
pub fn is_cypher_key(key: &str) -> bool {
    key.starts_with(CYPHER_KEY_PREFIX)
}

/// The plan store a process gives its roles (`AgentDeps::with`): the cache manager keeps
/// its plans there, the query executor learns grounded Cypher plans from it.
pub type SharedPlanStore = Arc<dyn PlanStore>;

#[async_trait]
pub trait PlanStore: Send + Sync + 'static {
    /// Every stored entry with its key, of both kinds.
    async fn load_every(&self) -> Result<Vec<(String, CacheEntry)>, PersistError>;

    /// Every stored relation-path plan with its key.
    async fn load_all(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        let mut entries = self.load_every().await?;
        entries.retain(|(key, _)| !is_cypher_key(key));
        Ok(entries)
    }

    /// Every stored grounded Cypher plan with its key.
    async fn load_cypher(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        let mut entries = self.load_every().await?;
        entries.retain(|(key, _)| is_cypher_key(key));
        Ok(entries)
    }

    async fn put(&self, key: &str, entry: &CacheEntry) -> Result<(), PersistError>;
    async fn delete(&self, key: &str) -> Result<(), PersistError>;
    /// Changes made by other writers, as they happen (`None` entry: deleted), when the
    /// store is shared; `None` for a store only this process writes. Both kinds of
    /// plan: readers tell them apart with [`is_cypher_key`].
    async fn changes(&self) -> Result<Option<ChangeStream>, PersistError> {
        Ok(None)
    }

    /// Whether this store keeps held verdicts ([`Self::load_held`]); without, the
    /// cache manager keeps them in memory.
    fn keeps_held(&self) -> bool {
        false
    }

    /// The verdicts held for confirmation on the plan under `key`.
    async fn load_held(&self, _key: &str) -> Result<HeldVerdicts, PersistError> {
        Ok(HeldVerdicts::default())
    }

    /// Replaces the verdicts held on `key` (an empty set deletes them).
    async fn save_held(&self, _key: &str, _held: &HeldVerdicts) -> Result<(), PersistError> {
        Ok(())
    }

    /// Appends `entry` to the audit; returns the id the store gave it (`None`: this
    /// store keeps no audit).
    async fn append_audit(&self, _entry: &AuditEntry) -> Result<Option<u64>, PersistError> {
        Ok(None)
    }

    /// The newest audit entries first, at most `limit`, only those of `key` when given.
    async fn history(
        &self,
        _key: Option<&str>,
        _limit: usize,
    ) -> Result<Vec<AuditEntry>, PersistError> {
        Ok(Vec::new())
    }

    /// The audit entry `id`.
    async fn audit_entry(&self, _id: u64) -> Result<Option<AuditEntry>, PersistError> {
        Ok(None)
    }
}

/// Remote changes: (key, entry after the change, `None` when deleted).
pub type ChangeStream = futures::stream::BoxStream<'static, (String, Option<CacheEntry>)>;

#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum LogLine {
    Put { key: String, entry: Box<CacheEntry> },
    Del { key: String },
}

/// An append-only JSON-lines log, compacted when loaded. Each write is flushed and
/// synced before it returns, so an acknowledged entry survives a crash. A torn last
/// line (a crash mid-write) is skipped with a warning; other bad lines are reported
/// and kept out of the cache, never silently dropped from the file until compaction
/// has written every good entry. File work (writes, syncs, compaction) runs on
/// tokio's blocking threads, never on the thread that serves requests; compaction
/// writes the live entries through one buffer and syncs once, then swaps the file in.
pub struct FilePlanStore {
    path: PathBuf,
    file: tokio::sync::Mutex<Option<std::fs::File>>,
    /// Where this process last saw the audit log end, and the last id in it.
    audit: tokio::sync::Mutex<AuditTail>,
    /// Serializes this process's rewrites of the held verdicts.
    held: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default, Clone, Copy)]
struct AuditTail {
    offset: u64,
    last_id: u64,
}

impl FilePlanStore {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            file: tokio::sync::Mutex::new(None),
            audit: tokio::sync::Mutex::new(AuditTail::default()),
            held: tokio::sync::Mutex::new(()),
        }
    }

    /// The audit log beside the cache file: `plans.jsonl` → `plans.audit.jsonl`.
    pub fn audit_path(&self) -> PathBuf {
        self.path.with_extension("audit.jsonl")
    }

    /// The held verdicts beside the cache file: `plans.jsonl` → `plans.pending.json`.
    pub fn held_path(&self) -> PathBuf {
        self.path.with_extension("pending.json")
    }

    /// Appends `entry` with the next id, reading first what other writers (another
    /// process on the same file) appended since `tail`; a torn last line (a crash
    /// mid-write) is ended, so the new entry starts a line of its own.
    fn append_audit_blocking(
        path: &Path,
        tail: &mut AuditTail,
        entry: &AuditEntry,
    ) -> Result<u64, PersistError> {
        use std::io::{Read, Seek, SeekFrom};
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Self::io_error(path, e))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| Self::io_error(path, e))?;
        let length = file.metadata().map_err(|e| Self::io_error(path, e))?.len();
        if length < tail.offset {
            // Replaced by someone else: read it again from the start.
            *tail = AuditTail::default();
        }
        let mut torn = false;
        if length > tail.offset {
            file.seek(SeekFrom::Start(tail.offset))
                .map_err(|e| Self::io_error(path, e))?;
            let mut text = String::new();
            file.read_to_string(&mut text)
                .map_err(|e| Self::io_error(path, e))?;
            for line in text.lines() {
                if let Ok(seen) = serde_json::from_str::<AuditEntry>(line) {
                    tail.last_id = tail.last_id.max(seen.id);
                }
            }
            torn = !text.ends_with('\n');
        }
        let mut stamped = entry.clone();
        stamped.id = tail.last_id + 1;
        let mut text = String::new();
        if torn {
            text.push('\n');
        }
        text.push_str(&serde_json::to_string(&stamped).map_err(|e| Self::io_error(path, e))?);
        text.push('\n');
        file.write_all(text.as_bytes())
            .map_err(|e| Self::io_error(path, e))?;
        file.sync_data().map_err(|e| Self::io_error(path, e))?;
        tail.offset = length + text.len() as u64;
        tail.last_id = stamped.id;
        Ok(stamped.id)
    }

    /// Every readable audit entry, oldest first; unreadable lines (a torn last line)
    /// are skipped with a warning.
    fn read_audit(path: &Path) -> Result<Vec<AuditEntry>, PersistError> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(Self::io_error(path, error)),
        };
        let mut entries = Vec::new();
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| Self::io_error(path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<AuditEntry>(&line) {
                Ok(entry) => entries.push(entry),
                Err(error) => {
                    tracing::warn!(path = %path.display(), line = number + 1, %error, "skipping unreadable audit line");
                }
            }
        }
        Ok(entries)
    }

    fn read_held(path: &Path) -> Result<BTreeMap<String, HeldVerdicts>, PersistError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| Self::io_error(path, e)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(error) => Err(Self::io_error(path, error)),
        }
    }

    /// Writes `all` to a new file, syncs it and swaps it in: a crash leaves the old
    /// file or the new one, never half of one.
    fn write_held(path: &Path, all: &BTreeMap<String, HeldVerdicts>) -> Result<(), PersistError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Self::io_error(path, e))?;
        }
        let temporary = path.with_extension("json.new");
        let text = serde_json::to_string_pretty(all).map_err(|e| Self::io_error(path, e))?;
        let mut file =
            std::fs::File::create(&temporary).map_err(|e| Self::io_error(&temporary, e))?;
        file.write_all(text.as_bytes())
            .map_err(|e| Self::io_error(&temporary, e))?;
        file.sync_all().map_err(|e| Self::io_error(&temporary, e))?;
        std::fs::rename(&temporary, path).map_err(|e| Self::io_error(path, e))
    }

    fn io_error(path: &Path, error: impl std::fmt::Display) -> PersistError {
        PersistError::Io {
            path: path.display().to_string(),
            detail: error.to_string(),
        }
    }

    fn read(path: &Path) -> Result<(BTreeMap<String, CacheEntry>, usize), PersistError> {
        let mut entries = BTreeMap::new();
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok((entries, 0)),
            Err(error) => return Err(Self::io_error(path, error)),
        };
        let mut lines = 0;
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| Self::io_error(path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            lines += 1;
            match serde_json::from_str::<LogLine>(&line) {
                Ok(LogLine::Put { key, entry }) => {
                    entries.insert(key, *entry);
                }
                Ok(LogLine::Del { key }) => {
                    entries.remove(&key);
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), line = number + 1, %error, "skipping unreadable plan cache line");
                }
            }
        }
        Ok((entries, lines))
    }

    fn write_line(out: &mut impl Write, path: &Path, line: &LogLine) -> Result<(), PersistError> {
        let mut text = serde_json::to_string(line).map_err(|e| Self::io_error(path, e))?;
        text.push('\n');
        out.write_all(text.as_bytes())
            .map_err(|e| Self::io_error(path, e))
    }

    fn open_for_append(path: &Path) -> Result<std::fs::File, PersistError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Self::io_error(path, e))?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Self::io_error(path, e))
    }

    /// Appends `line` and syncs it, on a blocking thread; the file stays open between
    /// writes (and is opened again after a failed one).
    async fn append(&self, line: LogLine) -> Result<(), PersistError> {
        let mut guard = self.file.lock().await;
        let open = guard.take();
        let path = self.path.clone();
        let (file, result) = tokio::task::spawn_blocking(move || {
            let mut file = match open {
                Some(file) => file,
                None => match Self::open_for_append(&path) {
                    Ok(file) => file,
                    Err(error) => return (None, Err(error)),
                },
            };
            let written = Self::write_line(&mut file, &path, &line)
                .and_then(|()| file.sync_data().map_err(|e| Self::io_error(&path, e)));
            match written {
                Ok(()) => (Some(file), Ok(())),
                Err(error) => (None, Err(error)),
            }
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))?;
        *guard = file;
        result
    }

    /// Writes `entries` to a new file with one sync, then swaps it in for the log.
    fn compact(path: &Path, entries: &BTreeMap<String, CacheEntry>) -> Result<(), PersistError> {
        let temporary = path.with_extension("compact");
        let file = std::fs::File::create(&temporary).map_err(|e| Self::io_error(&temporary, e))?;
        let mut out = std::io::BufWriter::new(file);
        for (key, entry) in entries {
            let line = LogLine::Put {
                key: key.clone(),
                entry: Box::new(entry.clone()),
            };
            Self::write_line(&mut out, &temporary, &line)?;
        }
        let file = out
            .into_inner()
            .map_err(|e| Self::io_error(&temporary, e.error()))?;
        file.sync_all().map_err(|e| Self::io_error(&temporary, e))?;
        std::fs::rename(&temporary, path).map_err(|e| Self::io_error(path, e))
    }
}

#[async_trait]
impl PlanStore for FilePlanStore {
    async fn load_every(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        // Writers wait while the log is read and perhaps replaced; the open handle
        // would point at the old file after a compaction, so it is dropped.
        let mut guard = self.file.lock().await;
        *guard = None;
        let path = self.path.clone();
        let entries = tokio::task::spawn_blocking(move || {
            let (entries, lines) = Self::read(&path)?;
            if lines > 2 * entries.len() + 64 {
                Self::compact(&path, &entries)?;
            }
            Ok::<_, PersistError>(entries)
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))??;
        Ok(entries.into_iter().collect())
    }

    async fn put(&self, key: &str, entry: &CacheEntry) -> Result<(), PersistError> {
        self.append(LogLine::Put {
            key: key.to_owned(),
            entry: Box::new(entry.clone()),
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<(), PersistError> {
        self.append(LogLine::Del {
            key: key.to_owned(),
        })
        .await
    }

    fn keeps_held(&self) -> bool {
        true
    }

    async fn load_held(&self, key: &str) -> Result<HeldVerdicts, PersistError> {
        let _guard = self.held.lock().await;
        let path = self.held_path();
        let key = key.to_owned();
        tokio::task::spawn_blocking(move || {
            Ok(Self::read_held(&path)?.remove(&key).unwrap_or_default())
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))?
    }

    async fn save_held(&self, key: &str, held: &HeldVerdicts) -> Result<(), PersistError> {
        let _guard = self.held.lock().await;
        let path = self.held_path();
        let (key, held) = (key.to_owned(), held.clone());
        tokio::task::spawn_blocking(move || {
            let mut all = Self::read_held(&path)?;
            if held.is_empty() {
                if all.remove(&key).is_none() {
                    return Ok(());
                }
            } else {
                all.insert(key, held);
            }
            Self::write_held(&path, &all)
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))?
    }

    async fn append_audit(&self, entry: &AuditEntry) -> Result<Option<u64>, PersistError> {
        let mut guard = self.audit.lock().await;
        let mut tail = *guard;
        let path = self.audit_path();
        let entry = entry.clone();
        let (tail, result) = tokio::task::spawn_blocking(move || {
            let result = Self::append_audit_blocking(&path, &mut tail, &entry);
            (tail, result)
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))?;
        *guard = tail;
        result.map(Some)
    }

    async fn history(
        &self,
        key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, PersistError> {
        let path = self.audit_path();
        let key = key.map(str::to_owned);
        tokio::task::spawn_blocking(move || {
            let mut entries = Self::read_audit(&path)?;
            entries.retain(|entry| key.as_ref().is_none_or(|key| &entry.key == key));
            entries.reverse();
            entries.truncate(limit);
            Ok(entries)
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))?
    }

    async fn audit_entry(&self, id: u64) -> Result<Option<AuditEntry>, PersistError> {
        let path = self.audit_path();
        tokio::task::spawn_blocking(move || {
            Ok(Self::read_audit(&path)?
                .into_iter()
                .find(|entry| entry.id == id))
        })
        .await
        .map_err(|e| Self::io_error(&self.path, e))?
    }
}

/// NATS JetStream KV: every coordinator and cache-manager replica shares one bucket.
/// One key per entry, history 1: concurrent writers of different entries never lose
/// each other's work; writers of the same entry (same template) keep the last write.
pub struct KvPlanStore {
    kv: async_nats::jetstream::kv::Store,
    /// `<bucket>-pending`: the verdicts held for confirmation, by plan key.
    held: async_nats::jetstream::kv::Store,
    jetstream: async_nats::jetstream::Context,
    /// `<bucket>-audit`, on the subject `kgmesh-audit.<bucket>`.
    audit_stream: String,
    audit_subject: String,
}

impl KvPlanStore {
    /// Opens `bucket` (and its audit stream and held-verdicts bucket), creating them
    /// when they do not exist yet.
    pub async fn open(client: async_nats::Client, bucket: &str) -> Result<Self, PersistError> {
        let jetstream = async_nats::jetstream::new(client);
        let kv = Self::open_bucket(&jetstream, bucket, "kgmesh verified retrieval plans").await?;
        let held_bucket = format!("{bucket}-pending");
        let held = Self::open_bucket(
            &jetstream,
            &held_bucket,
            "kgmesh plan cache verdicts held for confirmation",
        )
        .await?;
        let audit_stream = format!("{bucket}-audit");
        let audit_subject = format!("kgmesh-audit.{bucket}");
        {
            use async_nats::jetstream::stream;
            let config = stream::Config {
                name: audit_stream.clone(),
                subjects: vec![audit_subject.clone()],
                description: Some("kgmesh plan cache audit (who changed which plan)".to_owned()),
                deny_delete: true,
                deny_purge: true,
                allow_direct: true,
                num_replicas: 1,
                storage: stream::StorageType::File,
                ..Default::default()
            };
            if jetstream.get_stream(&audit_stream).await.is_err() {
                if let Err(error) = jetstream.create_stream(config).await {
                    // Another replica may have created it in the meantime.
                    tracing::debug!(%error, "creating the plan cache audit stream");
                }
                jetstream.get_stream(&audit_stream).await.map_err(|e| {
                    PersistError::Remote(format!("cannot open the stream {audit_stream}: {e}"))
                })?;
            }
        }
        Ok(Self {
            kv,
            held,
            jetstream,
            audit_stream,
            audit_subject,
        })
    }

    async fn open_bucket(
        jetstream: &async_nats::jetstream::Context,
        bucket: &str,
        description: &str,
    ) -> Result<async_nats::jetstream::kv::Store, PersistError> {
        if jetstream.get_key_value(bucket).await.is_err() {
            // The bucket's stream is created by hand, following the KV conventions:
            // `create_key_value` first reads account info, whose reply from NATS 2.9
            // servers this client version cannot parse.
            use async_nats::jetstream::stream;
            let config = stream::Config {
                name: format!("KV_{bucket}"),
                subjects: vec![format!("$KV.{bucket}.>")],
                description: Some(description.to_owned()),
                max_messages_per_subject: 1,
                discard: stream::DiscardPolicy::New,
                allow_rollup: true,
                deny_delete: true,
                allow_direct: true,
                num_replicas: 1,
                storage: stream::StorageType::File,
                ..Default::default()
            };
            if let Err(error) = jetstream.create_stream(config).await {
                // Another replica may have created it in the meantime.
                tracing::debug!(%error, "creating the plan cache stream");
            }
        }
        jetstream
            .get_key_value(bucket)
            .await
            .map_err(|e| PersistError::Remote(format!("cannot open KV bucket {bucket}: {e}")))
    }

    /// The audit entry at `sequence` of the audit stream, if it is one.
    async fn audit_at(
        &self,
        stream: &async_nats::jetstream::stream::Stream,
        sequence: u64,
    ) -> Option<AuditEntry> {
        let message = stream.get_raw_message(sequence).await.ok()?;
        match serde_json::from_slice::<AuditEntry>(&message.payload) {
            Ok(mut entry) => {
                entry.id = sequence;
                Some(entry)
            }
            Err(error) => {
                tracing::warn!(sequence, %error, "skipping an undecodable audit entry");
                None
            }
        }
    }

    /// Changes made by any replica (puts and deletes), as they happen.
    pub async fn watch(&self) -> Result<async_nats::jetstream::kv::Watch, PersistError> {
        self.kv
            .watch_all()
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))
    }

    /// The entries whose keys `keep` accepts (only those values are fetched).
    async fn load_matching(
        &self,
        keep: impl Fn(&str) -> bool + Send,
    ) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        use futures::TryStreamExt;
        let keys: Vec<String> = self
            .kv
            .keys()
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?
            .try_collect()
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?;
        let keys: Vec<String> = keys.into_iter().filter(|key| keep(key)).collect();
        let mut entries = Vec::with_capacity(keys.len());
        for key in keys {
            let Some(bytes) = self
                .kv
                .get(key.clone())
                .await
                .map_err(|e| PersistError::Remote(e.to_string()))?
            else {
                continue;
            };
            match serde_json::from_slice::<CacheEntry>(&bytes) {
                Ok(entry) => entries.push((key, entry)),
                Err(error) => tracing::warn!(%key, %error, "skipping undecodable plan cache entry"),
            }
        }
        Ok(entries)
    }

    /// Decodes a watched entry: `Some(entry)` for a put, `None` for a delete or purge.
    pub fn decode(entry: &async_nats::jetstream::kv::Entry) -> Option<CacheEntry> {
        match entry.operation {
            async_nats::jetstream::kv::Operation::Put => serde_json::from_slice(&entry.value).ok(),
            _ => None,
        }
    }
}

#[async_trait]
impl PlanStore for KvPlanStore {
    async fn load_every(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        self.load_matching(|_| true).await
    }

    async fn load_all(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        self.load_matching(|key| !is_cypher_key(key)).await
    }

    async fn load_cypher(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
        self.load_matching(is_cypher_key).await
    }

    async fn put(&self, key: &str, entry: &CacheEntry) -> Result<(), PersistError> {
        let bytes = serde_json::to_vec(entry).map_err(|e| PersistError::Remote(e.to_string()))?;
        self.kv
            .put(key, bytes.into())
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?;
        Ok(())
    }

    async fn changes(&self) -> Result<Option<ChangeStream>, PersistError> {
        use futures::StreamExt;
        let watch = self.watch().await?;
        let stream = watch.filter_map(|change| async move {
            let change = change.ok()?;
            let entry = KvPlanStore::decode(&change);
            Some((change.key, entry))
        });
        Ok(Some(stream.boxed()))
    }

    async fn delete(&self, key: &str) -> Result<(), PersistError> {
        self.kv
            .delete(key)
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))
    }

    fn keeps_held(&self) -> bool {
        true
    }

    async fn load_held(&self, key: &str) -> Result<HeldVerdicts, PersistError> {
        let Some(bytes) = self
            .held
            .get(key)
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?
        else {
            return Ok(HeldVerdicts::default());
        };
        serde_json::from_slice(&bytes)
            .map_err(|e| PersistError::Remote(format!("held verdicts of {key}: {e}")))
    }

    async fn save_held(&self, key: &str, held: &HeldVerdicts) -> Result<(), PersistError> {
        if held.is_empty() {
            return self
                .held
                .delete(key)
                .await
                .map_err(|e| PersistError::Remote(e.to_string()));
        }
        let bytes = serde_json::to_vec(held).map_err(|e| PersistError::Remote(e.to_string()))?;
        self.held
            .put(key, bytes.into())
            .await
            .map(|_| ())
            .map_err(|e| PersistError::Remote(e.to_string()))
    }

    async fn append_audit(&self, entry: &AuditEntry) -> Result<Option<u64>, PersistError> {
        let bytes = serde_json::to_vec(entry).map_err(|e| PersistError::Remote(e.to_string()))?;
        let ack = self
            .jetstream
            .publish(self.audit_subject.clone(), bytes.into())
            .await
            .map_err(|e| PersistError::Remote(format!("audit: {e}")))?
            .await
            .map_err(|e| PersistError::Remote(format!("audit: {e}")))?;
        Ok(Some(ack.sequence))
    }

    async fn history(
        &self,
        key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, PersistError> {
        let mut stream = self
            .jetstream
            .get_stream(&self.audit_stream)
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?;
        let state = stream
            .info()
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?
            .state
            .clone();
        let mut entries = Vec::new();
        if state.messages == 0 {
            return Ok(entries);
        }
        let oldest = state
            .first_sequence
            .max(state.last_sequence.saturating_sub(HISTORY_SCAN));
        let mut sequence = state.last_sequence;
        while sequence >= oldest && entries.len() < limit {
            if let Some(entry) = self.audit_at(&stream, sequence).await {
                if key.is_none_or(|key| entry.key == key) {
                    entries.push(entry);
                }
            }
            if sequence == 0 {
                break;
            }
            sequence -= 1;
        }
        Ok(entries)
    }

    async fn audit_entry(&self, id: u64) -> Result<Option<AuditEntry>, PersistError> {
        let stream = self
            .jetstream
            .get_stream(&self.audit_stream)
            .await
            .map_err(|e| PersistError::Remote(e.to_string()))?;
        Ok(self.audit_at(&stream, id).await)
    }
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::messages::cache::{Isr, Plan};

    use super::*;

    fn entry(question: &str) -> CacheEntry {
        CacheEntry {
            question: question.to_owned(),
            template: question.to_owned(),
            isr: Isr::default(),
            plan: Plan::default(),
            answers: vec!["a".to_owned()],
            hits: 1,
            failures: 0,
        }
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn entries_survive_a_restart_and_deletes_stick() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache").join("plans.jsonl");
        block_on(async {
            let store = FilePlanStore::new(&path);
            store.put("a", &entry("first")).await.unwrap();
            store.put("b", &entry("second")).await.unwrap();
            store.delete("a").await.unwrap();
        });
        // A torn final line, as after a crash mid-write.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"op\":\"put\",\"ke")
            .unwrap();
        let loaded = block_on(FilePlanStore::new(&path).load_all()).unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].0, "b");
        assert_eq!(loaded[0].1.question, "second");
    }

    #[test]
    fn loading_compacts_a_long_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plans.jsonl");
        block_on(async {
            let store = FilePlanStore::new(&path);
            for i in 0..200 {
                store
                    .put("same", &entry(&format!("version {i}")))
                    .await
                    .unwrap();
            }
        });
        let loaded = block_on(FilePlanStore::new(&path).load_all()).unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].1.question, "version 199");
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert_eq!(lines, 1, "log compacted to the live entries");
    }
}
