//! The thread behind a [`super::ParquetFile`]: it encodes each batch's columns as they come
//! (the Apache Arrow project's column writers) and appends them to the file as a row group.
//!
//! One column may be written late ([`Late`]): a column computed from another of the same rows
//! by a function that only becomes ready while the rows are being written (`dissect`'s `marks`,
//! from a replay running at the same time as the frame pass). Until then every other column of
//! a group is encoded at once (compressed pages, a small share of the rows' size) and only the
//! late column's writer waits, with the key column it is computed from; at most
//! [`MAX_WAITING`] groups wait, then the encoder waits for the function.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, TryRecvError};

use anyhow::Context as _;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use parquet::file::writer::SerializedFileWriter;

use crate::outfile::AtomicFile;

/// Groups whose late column may wait for its function (each holds its other columns encoded,
/// about 1 MiB for a group of frames, and its key column).
pub const MAX_WAITING: usize = 16;

/// Computes the late column of a batch from its key column.
pub type Fill = Box<dyn FnMut(&UInt64Array) -> ArrayRef + Send>;

/// A column written late (see the module's text).
pub struct Late {
    /// The late column's index among the top-level fields.
    pub field: usize,
    /// The index of the `UInt64` column it is computed from.
    pub key: usize,
    /// The function, once it is ready (or why there is none).
    pub ready: Receiver<anyhow::Result<Fill>>,
}

/// A group waiting for the late column: its other columns' chunks in leaf order (the late
/// column's leaves missing), the late column's writers, its key column.
struct Waiting {
    chunks: Vec<Option<ArrowColumnChunk>>,
    late_writers: Vec<ArrowColumnWriter>,
    key: UInt64Array,
}

struct Encoder {
    file: SerializedFileWriter<AtomicFile>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Row groups started (written or waiting).
    groups: usize,
    name: String,
}

/// Run the encoder over `batches` until the sender is dropped, then write the footer.
///
/// # Errors
/// Encoding or writing failed, or the late column's function never came.
pub fn run(
    writer: ArrowWriter<AtomicFile>,
    schema: SchemaRef,
    batches: &Receiver<RecordBatch>,
    late: Option<Late>,
    name: &str,
) -> anyhow::Result<AtomicFile> {
    let (file, factory) = writer.into_serialized_writer().context(name.to_owned())?;
    let mut enc = Encoder {
        file,
        factory,
        schema,
        groups: 0,
        name: name.to_owned(),
    };
    let mut fill: Option<Fill> = None;
    let mut waiting: VecDeque<Waiting> = VecDeque::new();
    for batch in batches {
        let Some(late) = &late else {
            enc.write_whole(&batch, None)?;
            continue;
        };
        if fill.is_none() {
            match late.ready.try_recv() {
                Ok(f) => fill = Some(f?),
                Err(TryRecvError::Empty) if waiting.len() < MAX_WAITING => {}
                Err(TryRecvError::Empty) => fill = Some(wait(&late.ready, name)?),
                Err(TryRecvError::Disconnected) => {
                    anyhow::bail!("{name}: the late column never came")
                }
            }
        }
        match &mut fill {
            Some(f) => {
                while let Some(w) = waiting.pop_front() {
                    enc.finish_waiting(w, late.field, f)?;
                }
                enc.write_whole(&batch, Some((late, f)))?;
            }
            None => waiting.push_back(enc.start_waiting(&batch, late)?),
        }
    }
    if let Some(late) = &late
        && !waiting.is_empty()
    {
        let mut f = match fill {
            Some(f) => f,
            None => wait(&late.ready, name)?,
        };
        while let Some(w) = waiting.pop_front() {
            enc.finish_waiting(w, late.field, &mut f)?;
        }
    }
    enc.file.into_inner().context(enc.name)
}

fn wait(ready: &Receiver<anyhow::Result<Fill>>, name: &str) -> anyhow::Result<Fill> {
    match ready.recv() {
        Ok(f) => f,
        Err(_) => anyhow::bail!("{name}: the late column never came"),
    }
}

/// Primitive leaves under a field of this type (what `compute_leaves` gives for it).
fn leaves(t: &DataType) -> usize {
    match t {
        DataType::Struct(fields) => fields.iter().map(|f| leaves(f.data_type())).sum(),
        DataType::List(item) | DataType::LargeList(item) => leaves(item.data_type()),
        _ => 1,
    }
}

impl Encoder {
    /// The late column of `batch` computed by `fill` from its key column.
    fn late_column(batch: &RecordBatch, late: &Late, fill: &mut Fill) -> anyhow::Result<ArrayRef> {
        let key = batch
            .column(late.key)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .context("the late column's key is not UInt64")?;
        Ok(fill(key))
    }

    /// Encode every column of `batch` (the late one computed now, when there is one) and
    /// append the row group.
    fn write_whole(
        &mut self,
        batch: &RecordBatch,
        late: Option<(&Late, &mut Fill)>,
    ) -> anyhow::Result<()> {
        let late_col = match late {
            Some((l, f)) => Some((l.field, Self::late_column(batch, l, f)?)),
            None => None,
        };
        let mut writers = self.factory.create_column_writers(self.groups)?;
        self.groups += 1;
        let mut at = 0;
        for (i, field) in self.schema.fields().iter().enumerate() {
            let column = match &late_col {
                Some((l, c)) if *l == i => c,
                _ => batch.column(i),
            };
            for leaf in compute_leaves(field, column)? {
                writers
                    .get_mut(at)
                    .context("more leaves than column writers")?
                    .write(&leaf)?;
                at += 1;
            }
        }
        let mut group = self.file.next_row_group()?;
        for w in writers {
            w.close()?.append_to_row_group(&mut group)?;
        }
        group.close().context(self.name.clone())?;
        Ok(())
    }

    /// Encode every column of `batch` but the late one; the group waits for it.
    fn start_waiting(&mut self, batch: &RecordBatch, late: &Late) -> anyhow::Result<Waiting> {
        let writers = self.factory.create_column_writers(self.groups)?;
        self.groups += 1;
        let mut chunks = Vec::with_capacity(writers.len());
        let mut late_writers = Vec::new();
        let mut writers = writers.into_iter();
        for (i, field) in self.schema.fields().iter().enumerate() {
            if i == late.field {
                for _ in 0..leaves(field.data_type()) {
                    late_writers.push(writers.next().context("fewer column writers than leaves")?);
                    chunks.push(None);
                }
                continue;
            }
            for leaf in compute_leaves(field, batch.column(i))? {
                let mut w = writers.next().context("fewer column writers than leaves")?;
                w.write(&leaf)?;
                chunks.push(Some(w.close()?));
            }
        }
        let key = batch
            .column(late.key)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .context("the late column's key is not UInt64")?
            .clone();
        Ok(Waiting {
            chunks,
            late_writers,
            key,
        })
    }

    /// Compute a waiting group's late column and append the group.
    fn finish_waiting(&mut self, w: Waiting, field: usize, fill: &mut Fill) -> anyhow::Result<()> {
        let Waiting {
            mut chunks,
            late_writers,
            key,
        } = w;
        let column = fill(&key);
        let f = self.schema.field(field);
        let mut late = Vec::with_capacity(late_writers.len());
        for (mut wr, leaf) in late_writers.into_iter().zip(compute_leaves(f, &column)?) {
            wr.write(&leaf)?;
            late.push(wr.close()?);
        }
        let mut late = late.into_iter();
        for slot in &mut chunks {
            if slot.is_none() {
                *slot = late.next();
            }
        }
        let mut group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk
                .context("a late leaf without its chunk")?
                .append_to_row_group(&mut group)?;
        }
        group.close().context(self.name.clone())?;
        Ok(())
    }
}
