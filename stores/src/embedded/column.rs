//! A flat array of plain numbers that lives either on the heap (right after loading) or
//! inside a memory-mapped snapshot (after a reload). Reloading a snapshot therefore
//! costs one `mmap` and a checksum pass, not a parse: the arrays are used in place.

use std::{ops::Deref, sync::Arc};

use bytemuck::Pod;
use memmap2::Mmap;

/// Read-only view of `len` values of `T`, owned or mapped.
pub(crate) enum Column<T: Pod> {
    Owned(Vec<T>),
    /// `byte_start` is a multiple of `align_of::<T>()` inside a page-aligned mapping,
    /// checked once when the snapshot is opened, so the cast in `deref` cannot fail.
    Mapped {
        map: Arc<Mmap>,
        byte_start: usize,
        len: usize,
    },
}

impl<T: Pod> Column<T> {
    pub(crate) fn mapped(map: Arc<Mmap>, byte_start: usize, len: usize) -> Option<Self> {
        let byte_len = len.checked_mul(std::mem::size_of::<T>())?;
        let end = byte_start.checked_add(byte_len)?;
        let bytes = map.get(byte_start..end)?;
        // Validate the cast once so that `deref` never panics.
        bytemuck::try_cast_slice::<u8, T>(bytes).ok()?;
        Some(Self::Mapped {
            map,
            byte_start,
            len,
        })
    }
}

/// What a column costs in bytes, whatever the type of its values.
pub(crate) trait ColumnBytes {
    /// Bytes it holds on the heap: none when mapped.
    fn heap_bytes(&self) -> usize;

    /// Bytes of its values, on the heap or mapped.
    fn byte_len(&self) -> usize;
}

impl<T: Pod> ColumnBytes for Column<T> {
    fn heap_bytes(&self) -> usize {
        match self {
            Column::Owned(values) => values.capacity() * std::mem::size_of::<T>(),
            Column::Mapped { .. } => 0,
        }
    }

    fn byte_len(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }
}

impl<T: Pod> Default for Column<T> {
    fn default() -> Self {
        Column::Owned(Vec::new())
    }
}

impl<T: Pod> From<Vec<T>> for Column<T> {
    fn from(values: Vec<T>) -> Self {
        Column::Owned(values)
    }
}

impl<T: Pod> Deref for Column<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Column::Owned(values) => values,
            Column::Mapped {
                map,
                byte_start,
                len,
            } => {
                let bytes = &map[*byte_start..*byte_start + *len * std::mem::size_of::<T>()];
                bytemuck::cast_slice(bytes)
            }
        }
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Column::Owned(values) => write!(f, "Owned({} values)", values.len()),
            Column::Mapped { len, .. } => write!(f, "Mapped({len} values)"),
        }
    }
}
