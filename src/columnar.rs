//! Apache Parquet output (interfaces.md §10): `dissect -f parquet` (one row per frame) and
//! `analyze -f parquet` (a file per report table), for DuckDB, Spark, Polars and the rest.
//!
//! - [`schema`]: a table's fixed columns, declared per table as a tree (never inferred from the
//!   data), and their Arrow types;
//! - [`columns`]: rows gathered column by column as their JSON is walked, handed out as one
//!   Arrow batch per row group;
//! - [`row`]: a row from any `Serialize` struct, by its field names;
//! - the tables themselves belong to their commands: `dissect/parquet.rs` (a row per frame, fed
//!   by the dissectors' field walk) and `analyze/parquet.rs` (the report's tables, fed by the
//!   rows of the JSON report);
//! - [`ParquetFile`]: the Apache Arrow project's writer over an [`AtomicFile`], so a file is
//!   complete or absent, on a thread of its own ([`encoder`]): a row group is encoded while the
//!   next one is gathered.
//!
//! Rows are written a row group at a time ([`ROW_GROUP`] rows unless the file says otherwise:
//! [`ParquetFile::row_group`]), at most one group waiting for
//! the encoder (and, for a column written late, at most [`encoder::MAX_WAITING`] groups'
//! encoded columns): memory does not grow with the number of rows.

pub mod columns;
pub mod encoder;
pub mod row;
pub mod schema;

use std::path::Path;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use anyhow::Context as _;
use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::outfile::AtomicFile;
use columns::Table;

/// Rows per row group: large enough for good compression and fast scans, small enough that a
/// group's columns stay a few MiB (two groups are in memory at once: one gathered, one encoded).
pub const ROW_GROUP: usize = 16 * 1024;

/// One Parquet file being written from a [`Table`]'s batches, encoded on its own thread.
pub struct ParquetFile {
    /// Batches to the encoder (`None` once closed).
    batches: Option<SyncSender<RecordBatch>>,
    encoder: Option<JoinHandle<anyhow::Result<AtomicFile>>>,
    path: String,
    /// Rows per row group ([`ROW_GROUP`] unless set).
    group_rows: usize,
}

impl ParquetFile {
    /// Create `path` (under a temporary name until [`ParquetFile::close`]) for `table`'s rows;
    /// `schema_name` (`frames/1`, `flows/1`, …) goes into the key-value metadata as
    /// `rocescope.schema`, with `rocescope.version`. The `unique` columns (a value per row:
    /// frame numbers, times, PSNs, CRCs) are written without a dictionary, which would only
    /// cost time there. `late`: a column computed after its rows were written (see
    /// [`encoder`]).
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(
        path: &Path,
        table: &Table,
        schema_name: &str,
        unique: &[&str],
        late: Option<encoder::Late>,
    ) -> anyhow::Result<ParquetFile> {
        let shown = path.display().to_string();
        let file = AtomicFile::create(path).with_context(|| shown.clone())?;
        let mut props = WriterProperties::builder();
        for &column in unique {
            props = props.set_column_dictionary_enabled(ColumnPath::from(column), false);
        }
        let props = props
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(vec![
                KeyValue::new(
                    "rocescope.version".to_owned(),
                    env!("CARGO_PKG_VERSION").to_owned(),
                ),
                KeyValue::new("rocescope.schema".to_owned(), schema_name.to_owned()),
            ]))
            .build();
        let schema = table.schema();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .with_context(|| shown.clone())?;
        let (batches, received) = sync_channel::<RecordBatch>(1);
        let name = shown.clone();
        let encoder = std::thread::Builder::new()
            .name("parquet".into())
            .spawn(move || encoder::run(writer, schema, &received, late, &name))
            .with_context(|| format!("{shown}: cannot start the encoder"))?;
        Ok(ParquetFile {
            batches: Some(batches),
            encoder: Some(encoder),
            path: shown,
            group_rows: ROW_GROUP,
        })
    }

    /// Write row groups of `rows` rows (at least one) instead of [`ROW_GROUP`]: fewer for a
    /// table of many columns, whose groups would otherwise take tens of MiB.
    #[must_use]
    pub fn row_group(mut self, rows: usize) -> ParquetFile {
        self.group_rows = rows.max(1);
        self
    }

    /// Hand `table`'s rows to the encoder as a row group once it holds a group's rows
    /// ([`ROW_GROUP`] unless set; after each row, callers ask; a group is exactly one batch).
    ///
    /// # Errors
    /// As [`ParquetFile::write`].
    pub fn write_when_full(&mut self, table: &mut Table) -> anyhow::Result<()> {
        if table.rows() >= self.group_rows {
            self.write(table)?;
        }
        Ok(())
    }

    /// Hand the rows `table` gathered (nothing when it has none) to the encoder and empty the
    /// table; waits while the encoder is still busy with the group before.
    ///
    /// # Errors
    /// Writing failed (a full disk, …).
    pub fn write(&mut self, table: &mut Table) -> anyhow::Result<()> {
        if table.rows() == 0 {
            return Ok(());
        }
        let batch = table
            .finish()
            .with_context(|| format!("{}: building a row group", self.path))?;
        let sent = match &self.batches {
            Some(tx) => tx.send(batch).is_ok(),
            None => false,
        };
        if !sent {
            // the encoder stopped: its error says why
            self.batches = None;
            self.join()?;
            anyhow::bail!("{}: the Parquet encoder stopped", self.path);
        }
        Ok(())
    }

    fn join(&mut self) -> anyhow::Result<AtomicFile> {
        match self.encoder.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => anyhow::bail!("{}: the Parquet encoder failed", self.path),
            None => anyhow::bail!("{}: already closed", self.path),
        }
    }

    /// Write the rows still gathered, the footer, and give the file its name (a file dropped
    /// instead is removed: see `Drop`).
    ///
    /// # Errors
    /// Writing failed.
    pub fn close(mut self, table: &mut Table) -> anyhow::Result<()> {
        self.write(table)?;
        if let Some(key) = table.unmapped() {
            eprintln!(
                "rocescope: warning: {}: `{key}` has no column in this version's schema; left out",
                self.path
            );
        }
        self.batches = None; // the encoder finishes the file
        let mut file = self.join()?;
        file.commit().with_context(|| self.path.clone())?;
        Ok(())
    }
}

impl Drop for ParquetFile {
    /// A file not closed (an error before the end) is removed: the encoder is told to stop and
    /// waited for, and the temporary file it hands back is dropped unnamed. Without the wait the
    /// process could exit before the encoder's thread let go of the file.
    fn drop(&mut self) {
        self.batches = None;
        if let Some(encoder) = self.encoder.take() {
            drop(encoder.join());
        }
    }
}
