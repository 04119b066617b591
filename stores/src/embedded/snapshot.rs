//! Snapshots: an [`EmbeddedGraph`] written as one file that is memory-mapped back, so
//! that a reload costs reading the file (and one checksum pass over it), not parsing.
//!
//! Layout (little-endian):
//! ```text
//! 0   magic "KGMSNAP\0"
//! 8   format version (u32)        12  endianness marker 0x01020304 (u32)
//! 16  section count (u64)         24  CRC-32 of every byte from 40 to the end (u64)
//! 32  file length (u64)
//! 40  section table: per section (kind u32, reserved u32, offset u64, bytes u64, items u64)
//! …   sections, each starting on an 8-byte boundary
//! ```
//! The big arrays (CSR rows, names, name index) are used in place from the mapping; the
//! small vocabularies and the properties are one bincode section decoded on open.
//! A short, altered or foreign file is refused with [`StoreError::Corrupt`].

use std::{
    fs::File,
    io::{BufWriter, Seek, SeekFrom, Write},
    path::Path,
    sync::{Arc, OnceLock},
};

use bytemuck::Pod;
use memmap2::Mmap;
use serde::{Deserialize, Serialize};

use super::{
    column::Column,
    graph::{EmbeddedGraph, GraphData, Interned, Properties},
    load::io_error,
};
use crate::{StoreError, StoreResult};

pub const MAGIC: &[u8; 8] = b"KGMSNAP\0";
/// Bumped whenever the layout or [`normalize_name`](super::normalize_name) changes.
pub const FORMAT_VERSION: u32 = 2;
const ENDIAN_MARKER: u32 = 0x0102_0304;
const HEADER_BYTES: usize = 40;
const TABLE_ENTRY_BYTES: usize = 32;
const SECTION_COUNT: usize = 18;

#[derive(Serialize, Deserialize)]
struct Meta {
    relations: Vec<String>,
    relation_labels: Vec<(String, String)>,
    labels: Vec<String>,
    property_keys: Vec<String>,
    node_properties: Properties,
    edge_properties: Properties,
}

struct Section<'a> {
    bytes: &'a [u8],
    items: u64,
}

fn section<T: Pod>(values: &[T]) -> Section<'_> {
    Section {
        bytes: bytemuck::cast_slice(values),
        items: values.len() as u64,
    }
}

/// Writes `graph` to `path` (replacing it atomically via a temporary file beside it).
pub fn save(graph: &EmbeddedGraph, path: &Path) -> StoreResult<u64> {
    let data = &*graph.data;
    let meta = Meta {
        relations: data.relations.names.clone(),
        relation_labels: data.relation_labels.clone(),
        labels: data.labels.names.clone(),
        property_keys: data.property_keys.names.clone(),
        node_properties: data.node_properties.clone(),
        edge_properties: data.edge_properties.clone(),
    };
    let meta_bytes =
        bincode::serde::encode_to_vec(&meta, bincode::config::standard()).map_err(|error| {
            StoreError::Backend {
                detail: format!("cannot encode snapshot metadata: {error}"),
            }
        })?;
    let sections: [Section<'_>; SECTION_COUNT] = [
        section(&data.name_offsets),
        section(&data.name_bytes),
        section(&data.node_label_offsets),
        section(&data.node_labels),
        section(&data.label_node_offsets),
        section(&data.label_nodes),
        section(&data.out_offsets),
        section(&data.out_relations),
        section(&data.out_targets),
        section(&data.in_offsets),
        section(&data.in_relations),
        section(&data.in_sources),
        section(&data.in_edge_ids),
        section(&data.exact_hashes),
        section(&data.exact_nodes),
        section(&data.normalized_hashes),
        section(&data.normalized_nodes),
        Section {
            bytes: &meta_bytes,
            items: meta_bytes.len() as u64,
        },
    ];

    let temporary = path.with_extension("kgs.tmp");
    // A write that fails part-way leaves nothing behind.
    let file_length = match write_sections(&temporary, &sections) {
        Ok(length) => length,
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            return Err(error);
        }
    };
    if let Err(error) = std::fs::rename(&temporary, path) {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error(path, error));
    }
    Ok(file_length)
}

/// Writes the header, the section table and `sections` to `temporary`, synced.
fn write_sections(temporary: &Path, sections: &[Section<'_>]) -> StoreResult<u64> {
    let file = File::create(temporary).map_err(|error| io_error(temporary, error))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let write_error = |error: std::io::Error| io_error(temporary, error);

    let mut table = Vec::with_capacity(SECTION_COUNT * TABLE_ENTRY_BYTES);
    let mut offset = align8(HEADER_BYTES + SECTION_COUNT * TABLE_ENTRY_BYTES);
    for (kind, section) in sections.iter().enumerate() {
        table.extend_from_slice(&(kind as u32).to_le_bytes());
        table.extend_from_slice(&0u32.to_le_bytes());
        table.extend_from_slice(&(offset as u64).to_le_bytes());
        table.extend_from_slice(&(section.bytes.len() as u64).to_le_bytes());
        table.extend_from_slice(&section.items.to_le_bytes());
        offset = align8(offset + section.bytes.len());
    }
    let file_length = offset as u64;

    writer
        .write_all(&[0u8; HEADER_BYTES])
        .map_err(write_error)?;
    let mut hasher = crc32fast::Hasher::new();
    let mut position = HEADER_BYTES;
    let mut emit =
        |writer: &mut BufWriter<File>, bytes: &[u8], position: &mut usize| -> std::io::Result<()> {
            hasher.update(bytes);
            writer.write_all(bytes)?;
            *position += bytes.len();
            Ok(())
        };
    emit(&mut writer, &table, &mut position).map_err(write_error)?;
    for section in sections {
        let padding = align8(position) - position;
        emit(&mut writer, &[0u8; 8][..padding], &mut position).map_err(write_error)?;
        emit(&mut writer, section.bytes, &mut position).map_err(write_error)?;
    }
    let padding = align8(position) - position;
    emit(&mut writer, &[0u8; 8][..padding], &mut position).map_err(write_error)?;
    let checksum = hasher.finalize();

    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.extend_from_slice(&ENDIAN_MARKER.to_le_bytes());
    header.extend_from_slice(&(SECTION_COUNT as u64).to_le_bytes());
    header.extend_from_slice(&u64::from(checksum).to_le_bytes());
    header.extend_from_slice(&file_length.to_le_bytes());
    writer.seek(SeekFrom::Start(0)).map_err(write_error)?;
    writer.write_all(&header).map_err(write_error)?;
    let file = writer
        .into_inner()
        .map_err(|error| io_error(temporary, error.error()))?;
    file.sync_all().map_err(write_error)?;
    drop(file);
    Ok(file_length)
}

/// Callers check that the file holds the header and table before reading them.
fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(slice) = bytes.get(at..at + 4) {
        word.copy_from_slice(slice);
    }
    u32::from_le_bytes(word)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    if let Some(slice) = bytes.get(at..at + 8) {
        word.copy_from_slice(slice);
    }
    u64::from_le_bytes(word)
}

fn align8(value: usize) -> usize {
    (value + 7) & !7
}

/// Maps a snapshot and checks it (header, length, checksum, internal consistency).
pub fn open(path: &Path) -> StoreResult<EmbeddedGraph> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.display().to_string(),
        detail,
    };
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    // SAFETY: the mapping is read-only and snapshots are written to a temporary file and
    // renamed into place, never modified in place; a file truncated by someone else
    // while mapped is outside what this store can defend against.
    let map = unsafe { Mmap::map(&file) }.map_err(|error| io_error(path, error))?;
    if map.len() < HEADER_BYTES || &map[..8] != MAGIC {
        return Err(corrupt(
            "not a kgmesh graph snapshot (bad magic)".to_owned(),
        ));
    }
    let u32_at = |at: usize| read_u32(&map, at);
    let u64_at = |at: usize| read_u64(&map, at);
    let version = u32_at(8);
    if version != FORMAT_VERSION {
        return Err(corrupt(format!(
            "snapshot format version {version}, this build reads version {FORMAT_VERSION}: rebuild it with `kgmesh load`"
        )));
    }
    if u32_at(12) != ENDIAN_MARKER {
        return Err(corrupt(
            "snapshot written on a machine of other endianness".to_owned(),
        ));
    }
    let section_count = u64_at(16) as usize;
    let checksum = u64_at(24);
    let file_length = u64_at(32);
    if file_length != map.len() as u64 {
        return Err(corrupt(format!(
            "truncated or extended: header says {file_length} bytes, file has {}",
            map.len()
        )));
    }
    if section_count != SECTION_COUNT {
        return Err(corrupt(format!(
            "expected {SECTION_COUNT} sections, found {section_count}"
        )));
    }
    let table_end = HEADER_BYTES + SECTION_COUNT * TABLE_ENTRY_BYTES;
    if map.len() < table_end {
        return Err(corrupt("section table cut short".to_owned()));
    }
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&map[HEADER_BYTES..]);
    if u64::from(hasher.finalize()) != checksum {
        return Err(corrupt(
            "checksum mismatch: the file was altered or damaged".to_owned(),
        ));
    }
    let map = Arc::new(map);
    let mut entries = Vec::with_capacity(SECTION_COUNT);
    for index in 0..SECTION_COUNT {
        let at = HEADER_BYTES + index * TABLE_ENTRY_BYTES;
        let kind = read_u32(&map, at) as usize;
        if kind != index {
            return Err(corrupt(format!("section {index} has kind {kind}")));
        }
        entries.push((
            read_u64(&map, at + 8) as usize,
            read_u64(&map, at + 16) as usize,
            read_u64(&map, at + 24) as usize,
        ));
    }
    fn column<T: Pod>(
        map: &Arc<Mmap>,
        entry: (usize, usize, usize),
        index: usize,
    ) -> Result<Column<T>, String> {
        let (offset, bytes, items) = entry;
        if items.checked_mul(std::mem::size_of::<T>()) != Some(bytes) {
            return Err(format!(
                "section {index}: {items} items do not fill {bytes} bytes"
            ));
        }
        Column::mapped(map.clone(), offset, items)
            .ok_or_else(|| format!("section {index} lies outside the file or is misaligned"))
    }
    let (meta_offset, meta_bytes, _) = entries[17];
    let meta_slice = meta_offset
        .checked_add(meta_bytes)
        .and_then(|end| map.get(meta_offset..end))
        .ok_or_else(|| corrupt("metadata section lies outside the file".to_owned()))?;
    let (meta, _): (Meta, usize) =
        bincode::serde::decode_from_slice(meta_slice, bincode::config::standard())
            .map_err(|error| corrupt(format!("metadata does not decode: {error}")))?;

    let build = || -> Result<GraphData, String> {
        Ok(GraphData {
            name_offsets: column(&map, entries[0], 0)?,
            name_bytes: column(&map, entries[1], 1)?,
            node_label_offsets: column(&map, entries[2], 2)?,
            node_labels: column(&map, entries[3], 3)?,
            label_node_offsets: column(&map, entries[4], 4)?,
            label_nodes: column(&map, entries[5], 5)?,
            out_offsets: column(&map, entries[6], 6)?,
            out_relations: column(&map, entries[7], 7)?,
            out_targets: column(&map, entries[8], 8)?,
            in_offsets: column(&map, entries[9], 9)?,
            in_relations: column(&map, entries[10], 10)?,
            in_sources: column(&map, entries[11], 11)?,
            in_edge_ids: column(&map, entries[12], 12)?,
            exact_hashes: column(&map, entries[13], 13)?,
            exact_nodes: column(&map, entries[14], 14)?,
            normalized_hashes: column(&map, entries[15], 15)?,
            normalized_nodes: column(&map, entries[16], 16)?,
            relations: Interned::from_names(meta.relations),
            relation_labels: meta.relation_labels,
            labels: Interned::from_names(meta.labels),
            property_keys: Interned::from_names(meta.property_keys),
            node_properties: meta.node_properties,
            edge_properties: meta.edge_properties,
            schema_cache: OnceLock::new(),
        })
    };
    let data = build().map_err(corrupt)?;
    validate(&data).map_err(corrupt)?;
    Ok(EmbeddedGraph {
        data: Arc::new(data),
    })
}

/// Checks every index the accessors will follow, so that a consistent-looking but
/// crafted file cannot make them panic.
fn validate(data: &GraphData) -> Result<(), String> {
    let node_count = data
        .out_offsets
        .len()
        .checked_sub(1)
        .ok_or("no node offsets")?;
    let edge_count = data.out_targets.len();
    let relation_count = data.relations.names.len() as u32;
    let label_count = data.labels.names.len();
    check_offsets(
        "name",
        &data.name_offsets,
        node_count,
        data.name_bytes.len(),
    )?;
    for node in 0..node_count {
        let range = data.name_offsets[node] as usize..data.name_offsets[node + 1] as usize;
        std::str::from_utf8(&data.name_bytes[range])
            .map_err(|_| format!("name of node {node} is not UTF-8"))?;
    }
    check_offsets("out", &data.out_offsets, node_count, edge_count)?;
    check_offsets("in", &data.in_offsets, node_count, edge_count)?;
    for array in [&data.out_relations, &data.in_relations] {
        if array.len() != edge_count || array.iter().any(|relation| relation.0 >= relation_count) {
            return Err("relation ids out of range".to_owned());
        }
    }
    for array in [&data.out_targets, &data.in_sources] {
        if array.len() != edge_count || array.iter().any(|node| *node as usize >= node_count) {
            return Err("edge endpoints out of range".to_owned());
        }
    }
    if data.in_edge_ids.len() != edge_count
        || data
            .in_edge_ids
            .iter()
            .any(|edge| edge.0 as usize >= edge_count)
    {
        return Err("edge ids out of range".to_owned());
    }
    if !data.node_label_offsets.is_empty() {
        check_offsets(
            "label",
            &data.node_label_offsets,
            node_count,
            data.node_labels.len(),
        )?;
        check_offsets(
            "label index",
            &data.label_node_offsets,
            label_count,
            data.label_nodes.len(),
        )?;
    }
    if data
        .node_labels
        .iter()
        .any(|label| label.0 as usize >= label_count)
        || data
            .label_nodes
            .iter()
            .any(|node| *node as usize >= node_count)
    {
        return Err("labels out of range".to_owned());
    }
    for (hashes, nodes) in [
        (&data.exact_hashes, &data.exact_nodes),
        (&data.normalized_hashes, &data.normalized_nodes),
    ] {
        if hashes.len() != nodes.len() || nodes.iter().any(|node| *node as usize >= node_count) {
            return Err("name index out of range".to_owned());
        }
    }
    let key_count = data.property_keys.names.len() as u32;
    for (what, properties, owners) in [
        ("node", &data.node_properties, node_count),
        ("edge", &data.edge_properties, edge_count),
    ] {
        if properties.offsets.is_empty() {
            if !properties.keys.is_empty() {
                return Err(format!("{what} properties without offsets"));
            }
            continue;
        }
        let offsets: Vec<u32> = properties.offsets.clone();
        check_offsets(what, &offsets, owners, properties.keys.len())?;
        if properties.values.len() != properties.keys.len()
            || properties.keys.iter().any(|key| *key >= key_count)
        {
            return Err(format!("{what} property keys out of range"));
        }
    }
    Ok(())
}

fn check_offsets<T: Copy + Into<u64>>(
    what: &str,
    offsets: &[T],
    owners: usize,
    items: usize,
) -> Result<(), String> {
    if offsets.len() != owners + 1 {
        return Err(format!(
            "{what} offsets: expected {} entries, found {}",
            owners + 1,
            offsets.len()
        ));
    }
    let mut previous = 0u64;
    for offset in offsets {
        let offset: u64 = (*offset).into();
        if offset < previous {
            return Err(format!("{what} offsets decrease"));
        }
        previous = offset;
    }
    if offsets.first().map(|first| (*first).into()) != Some(0) || previous != items as u64 {
        return Err(format!("{what} offsets do not span their {items} items"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::graph::Value;

    use super::*;
    use crate::embedded::GraphBuilder;

    fn sample() -> EmbeddedGraph {
        let mut builder = GraphBuilder::new();
        let order = builder.add_node("10248");
        let chai = builder.add_node("Chai");
        let mann = builder.node("Michael Mann");
        builder.add_label(order, "Order");
        builder.add_label(chai, "Product");
        builder.set_property(chai, "unitPrice", Value::Float(18.0));
        let edge = builder.add_edge(order, "ORDERS", chai);
        builder.set_edge_property(edge, "quantity", Value::Int(12));
        builder.add_edge(mann, "directed", chai);
        builder.finish()
    }

    #[test]
    fn a_reloaded_snapshot_answers_like_the_original() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.kgs");
        let original = sample();
        save(&original, &path).unwrap();
        let reloaded = open(&path).unwrap();
        assert_eq!(reloaded.node_count(), original.node_count());
        assert_eq!(reloaded.edge_count(), original.edge_count());
        assert_eq!(
            reloaded.structure_heap_bytes(),
            0,
            "columns are mapped, not copied"
        );
        for node in 0..original.node_count() as u32 {
            assert_eq!(reloaded.name(node), original.name(node));
            assert_eq!(reloaded.labels(node), original.labels(node));
            let (a, b) = (reloaded.out_edges(node), original.out_edges(node));
            assert_eq!((a.relations, a.nodes), (b.relations, b.nodes));
            let (a, b) = (reloaded.in_edges(node), original.in_edges(node));
            assert_eq!((a.relations, a.nodes), (b.relations, b.nodes));
        }
        let chai = reloaded.lookup_normalized("chai")[0];
        assert_eq!(
            reloaded.node_property_by_name(chai, "unitPrice"),
            Some(&Value::Float(18.0))
        );
        let orders = reloaded.relation_id("ORDERS").unwrap();
        let edge = reloaded.in_edges_via(chai, orders).edge_id(0);
        assert_eq!(
            reloaded.edge_property_by_name(edge, "quantity"),
            Some(&Value::Int(12))
        );
        assert_eq!(reloaded.schema_sync(), original.schema_sync());
    }

    #[test]
    fn a_failed_save_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a directory: the file is written, the rename onto it fails.
        let target = dir.path().join("graph.kgs");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"x").unwrap();
        assert!(save(&sample(), &target).is_err());
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["graph.kgs"], "only the directory that was there");
    }

    #[test]
    fn damaged_files_are_refused_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.kgs");
        save(&sample(), &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let expect_corrupt = |bytes: &[u8], needle: &str| {
            let damaged = dir.path().join("damaged.kgs");
            std::fs::write(&damaged, bytes).unwrap();
            match open(&damaged) {
                Err(StoreError::Corrupt { detail, .. }) => {
                    assert!(
                        detail.contains(needle),
                        "`{detail}` should mention `{needle}`"
                    )
                }
                Err(other) => panic!("expected Corrupt, got {other:?}"),
                Ok(_) => panic!("a damaged snapshot was accepted"),
            }
        };
        let mut flipped = bytes.clone();
        let last = flipped.len() - 20;
        flipped[last] ^= 0x40;
        expect_corrupt(&flipped, "checksum");
        expect_corrupt(&bytes[..bytes.len() - 8], "truncated");
        expect_corrupt(&bytes[..10], "magic");
        expect_corrupt(b"Heat\tdirected_by\tMichael Mann\n", "magic");
        let mut other_version = bytes.clone();
        other_version[8] = 99;
        expect_corrupt(&other_version, "version");
        assert!(matches!(
            open(&dir.path().join("missing.kgs")),
            Err(StoreError::Io { .. })
        ));
    }

    #[test]
    fn an_empty_graph_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.kgs");
        save(&GraphBuilder::new().finish(), &path).unwrap();
        let graph = open(&path).unwrap();
        assert_eq!((graph.node_count(), graph.edge_count()), (0, 0));
    }
}
