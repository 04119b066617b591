//! Where the plan cache survives restarts. In embedded mode a JSON-lines log file; in
//! distributed mode NATS JetStream KV (one key per entry, so concurrent writers never
//! overwrite each other's entries).

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
};

use async_trait::async_trait;
use kgmesh_schemas::messages::cache::CacheEntry;
use serde::{Deserialize, Serialize};

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
}

impl FilePlanStore {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            file: tokio::sync::Mutex::new(None),
        }
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
}

/// NATS JetStream KV: every coordinator and cache-manager replica shares one bucket.
/// One key per entry, history 1: concurrent writers of different entries never lose
/// each other's work; writers of the same entry (same template) keep the last write.
pub struct KvPlanStore {
    kv: async_nats::jetstream::kv::Store,
}

impl KvPlanStore {
    /// Opens `bucket`, creating it when it does not exist yet.
    pub async fn open(client: async_nats::Client, bucket: &str) -> Result<Self, PersistError> {
        let jetstream = async_nats::jetstream::new(client);
        if jetstream.get_key_value(bucket).await.is_err() {
            // The bucket's stream is created by hand, following the KV conventions:
            // `create_key_value` first reads account info, whose reply from NATS 2.9
            // servers this client version cannot parse.
            use async_nats::jetstream::stream;
            let config = stream::Config {
                name: format!("KV_{bucket}"),
                subjects: vec![format!("$KV.{bucket}.>")],
                description: Some("kgmesh verified retrieval plans".to_owned()),
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
        let kv = jetstream
            .get_key_value(bucket)
            .await
            .map_err(|e| PersistError::Remote(format!("cannot open KV bucket {bucket}: {e}")))?;
        Ok(Self { kv })
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
