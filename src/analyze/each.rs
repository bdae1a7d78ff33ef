//! `analyze --each CAPTURE…` (interfaces.md §10): every capture analyzed on its own, not merged,
//! several at once over the cores (each replay on one thread, so the cores are not
//! oversubscribed), the reports written in the order the captures were named as they become
//! ready. `-f json` writes each report (§6.6) as one JSON document per line, its
//! `capture.files` naming the capture; `-f text` the text reports one after another, each under
//! a `== CAPTURE` line; `-f parquet -o DIR` each capture's tables into its own Hive partition,
//! `DIR/capture=NAME/` (NAME: the capture's file name), written by the worker that analyzed it.
//!
//! A capture that cannot be read does not stop the others: its line says why
//! (`{"capture":{"files":[NAME]},"error":…}` in JSON), and the run ends with a one-line error
//! naming how many failed (exit 2).

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError, mpsc};

use anyhow::Context;

use super::{AnalyzeConfig, Format, json, write_report};
use crate::outfile::AtomicFile;
use crate::replay::Replay;

/// One capture's replay and its config (the capture alone), for the writer to report when the
/// capture's turn comes (`None` when its tables are written already: `-f parquet`), or why
/// there is none; and whether `--fail-on` matched it. The replay waits, not its report: a
/// report (685 MB of JSON for 400,000 flows) is written straight to the output, never held.
type Done = (usize, Outcome);

/// What a worker made of one capture (see [`Done`]).
type Outcome = Result<(Option<(AnalyzeConfig, Replay)>, bool), String>;

/// Runs `--each`; true when `--fail-on` matched in any capture.
///
/// # Errors
/// The output cannot be written, `-f csv` (not per capture yet), or some captures could not be
/// analyzed (after every other report was written).
pub fn run(cfg: &AnalyzeConfig) -> anyhow::Result<bool> {
    if cfg.format == Format::Csv {
        anyhow::bail!(
            "--each writes -f json (a line per capture), -f text or -f parquet; not -f csv"
        );
    }
    // -f parquet: each capture's partition, checked before any is written
    let partitions = if cfg.format == Format::Parquet {
        partitions(cfg)?
    } else {
        Vec::new()
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(cfg.captures.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let gate = Gate::new(workers);
    let (tx, rx) = mpsc::channel::<Done>();
    let mut failed = 0usize;
    let mut matched = false;
    let written = std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            let partitions = &partitions;
            let gate = &gate;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = cfg.captures.get(i) else {
                        return;
                    };
                    if !gate.enter(i) {
                        return;
                    }
                    let done = one(cfg, path, partitions.get(i));
                    gate.finished(held_flows(&done));
                    if tx.send((i, done)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // however the writing ends, waiting workers are let go
        let _close = CloseOnDrop(&gate);
        let mut out = Output::open(cfg)?;
        // reports come as they finish; they go out in the order the captures were named
        let mut waiting = BTreeMap::new();
        let mut due = 0usize;
        for (i, done) in rx {
            waiting.insert(i, done);
            while let Some(done) = waiting.remove(&due) {
                let Some(name) = cfg.captures.get(due) else {
                    break;
                };
                let flows = held_flows(&done);
                match done {
                    Ok((replay, hit)) => {
                        matched |= hit;
                        if let Some((single, replay)) = replay {
                            out.report(&single, name, &replay)?;
                        }
                    }
                    Err(e) => {
                        failed += 1;
                        out.failure(cfg, name, &e)?;
                    }
                }
                due += 1;
                gate.written(due, flows);
            }
        }
        out.finish()
    });
    written?;
    if cfg.format == Format::Parquet
        && !cfg.quiet
        && let Some(dir) = &cfg.output
    {
        eprintln!(
            "rocescope: wrote the tables of {} captures to {}/capture=NAME/",
            cfg.captures.len() - failed,
            dir.display()
        );
    }
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} captures could not be analyzed (their lines say why)",
            cfg.captures.len()
        );
    }
    Ok(matched)
}

/// How far ahead of the writer the workers may go. Reports go out in the order the captures
/// were named, so a replay finished early waits for the ones before it; without a limit, a
/// fleet whose first capture is large would hold every later capture's replay (all its flows)
/// until the first is written. A capture is started when at most `window` captures before it
/// are unwritten (the cores kept busy), or beyond that while the replays waiting hold fewer
/// than [`WAITING_FLOWS`] flows: what waits is bounded by flows, not by the fleet's size.
struct Gate {
    window: usize,
    state: Mutex<GateState>,
    moved: Condvar,
}

/// Flows the finished, unwritten replays may hold before workers stop starting captures
/// beyond the window: about 170 MB of replay state, at the 170 bytes or so a flow that
/// `bench/scale.sh` measures at 400,000 flows.
const WAITING_FLOWS: usize = 1_000_000;

#[derive(Default)]
struct GateState {
    /// The first capture not written yet.
    due: usize,
    /// Flows of the replays finished and not written yet.
    waiting_flows: usize,
    /// The writer has stopped.
    closed: bool,
}

impl Gate {
    fn new(window: usize) -> Self {
        Gate {
            window: window.max(1),
            state: Mutex::new(GateState::default()),
            moved: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until capture `i` may be started; false when the writer has stopped.
    fn enter(&self, i: usize) -> bool {
        let mut state = self.lock();
        loop {
            if state.closed {
                return false;
            }
            if i <= state.due + self.window || state.waiting_flows < WAITING_FLOWS {
                return true;
            }
            state = self
                .moved
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A replay of `flows` flows is finished and waits to be written.
    fn finished(&self, flows: usize) {
        self.lock().waiting_flows += flows;
    }

    /// The capture `due - 1` is written, its replay of `flows` flows let go.
    fn written(&self, due: usize, flows: usize) {
        let mut state = self.lock();
        state.due = due;
        state.waiting_flows = state.waiting_flows.saturating_sub(flows);
        drop(state);
        self.moved.notify_all();
    }

    /// The writer has stopped: nothing more will be started.
    fn close(&self) {
        self.lock().closed = true;
        self.moved.notify_all();
    }
}

/// Closes the gate when the writer stops, by an error as well.
struct CloseOnDrop<'g>(&'g Gate);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The Hive partition of each capture, `DIR/capture=NAME` (checked to be distinct).
///
/// # Errors
/// Two captures with one file name, or a name that cannot be a partition's.
fn partitions(cfg: &AnalyzeConfig) -> anyhow::Result<Vec<PathBuf>> {
    let Some(dir) = &cfg.output else {
        anyhow::bail!("-f parquet writes a directory of tables: name it with -o DIR");
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(cfg.captures.len());
    for path in &cfg.captures {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            anyhow::bail!(
                "{}: --each -f parquet names a partition after the capture's file name, and this one has none",
                path.display()
            );
        };
        if !seen.insert(name) {
            anyhow::bail!(
                "{}: two captures are named {name}: their partitions (capture={name}) would be one; give them distinct file names",
                path.display()
            );
        }
        out.push(dir.join(format!("capture={name}")));
    }
    Ok(out)
}

/// Flows of the replay `done` holds until it is written.
fn held_flows(done: &Outcome) -> usize {
    match done {
        Ok((Some((_, replay)), _)) => replay.flows.len(),
        _ => 0,
    }
}

/// One capture, alone, on this thread; its tables into `partition` with `-f parquet`.
fn one(cfg: &AnalyzeConfig, path: &Path, partition: Option<&PathBuf>) -> Outcome {
    let mut single = cfg.clone();
    single.captures = vec![path.to_owned()];
    single.each = false;
    let replay = super::replay_with(&single, None).map_err(|e| format!("{e:#}"))?;
    let hit = !single.fail_on.is_empty() && single.fail_on.matches(&replay);
    if let Some(dir) = partition {
        super::parquet::write_dir(&single, &replay, dir).map_err(|e| format!("{e:#}"))?;
        return Ok((None, hit));
    }
    Ok((Some((single, replay)), hit))
}

/// Standard output or `-o FILE` (complete or absent).
enum Output {
    Stdout(BufWriter<io::Stdout>),
    File(BufWriter<AtomicFile>, PathBuf),
}

impl Output {
    fn open(cfg: &AnalyzeConfig) -> anyhow::Result<Self> {
        if cfg.format == Format::Parquet {
            // the tables are the workers'; stdout gets nothing, failures go to stderr
            return Ok(Output::Stdout(BufWriter::new(io::stdout())));
        }
        Ok(match &cfg.output {
            Some(p) => Output::File(
                BufWriter::with_capacity(
                    256 << 10,
                    AtomicFile::create(p)
                        .with_context(|| format!("{}: cannot create", p.display()))?,
                ),
                p.clone(),
            ),
            None => Output::Stdout(BufWriter::with_capacity(256 << 10, io::stdout())),
        })
    }

    fn w(&mut self) -> &mut dyn Write {
        match self {
            Output::Stdout(w) => w,
            Output::File(w, _) => w,
        }
    }

    /// The report of `replay` (`cfg`: its capture alone, named `name`).
    fn report(&mut self, cfg: &AnalyzeConfig, name: &Path, replay: &Replay) -> anyhow::Result<()> {
        match cfg.format {
            Format::Parquet => {}
            Format::Json => {
                // the report on one line (its `capture.files` names the capture), written in
                // blocks as it is made
                json::write_line(cfg, replay, self.w())?;
            }
            _ => {
                writeln!(self.w(), "== {}", name.display())?;
                write_report(cfg, replay, self.w(), false)?;
                writeln!(self.w())?;
            }
        }
        Ok(())
    }

    fn failure(&mut self, cfg: &AnalyzeConfig, name: &Path, error: &str) -> anyhow::Result<()> {
        let error = crate::text::one_line(error);
        match cfg.format {
            Format::Parquet => eprintln!("rocescope: {}: {error}", name.display()),
            Format::Json => {
                let line = serde_json::json!({
                    "capture": { "files": [name.display().to_string()] },
                    "error": error,
                });
                serde_json::to_writer(self.w(), &line)?;
                self.w().write_all(b"\n")?;
            }
            _ => writeln!(self.w(), "== {}\nerror: {error}\n", name.display())?,
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        match self {
            Output::Stdout(mut w) => w.flush()?,
            Output::File(w, path) => {
                let write_error = || format!("{}: write error", path.display());
                let mut file = w
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(write_error)?;
                file.commit().with_context(write_error)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Beyond the window, capture `i` is started only while the replays waiting hold few
    /// flows, else once the writer has come within the window of it; a stopped writer lets
    /// every waiting worker go.
    #[test]
    fn workers_wait_for_the_writer() {
        let gate = Gate::new(2);
        assert!(gate.enter(0) && gate.enter(1) && gate.enter(2));
        // captures 1 and 2 done while 0 runs; few flows wait: the fifth may start
        gate.finished(10);
        gate.finished(WAITING_FLOWS - 11);
        assert!(gate.enter(4));
        gate.finished(1);
        std::thread::scope(|scope| {
            let (entered, seen) = mpsc::channel();
            let gate = &gate;
            scope.spawn(move || entered.send(gate.enter(5)).unwrap());
            // WAITING_FLOWS flows wait, and three captures before it unwritten past the first
            assert!(seen.recv_timeout(Duration::from_millis(200)).is_err());
            // 0 and 1 written (say they held no replay): still too many flows wait, and 5 is
            // not within the window until 2 is written too
            gate.written(1, 0);
            gate.written(2, 0);
            assert!(seen.recv_timeout(Duration::from_millis(200)).is_err());
            gate.written(3, 0);
            assert_eq!(seen.recv_timeout(Duration::from_secs(10)), Ok(true));

            let (entered, seen) = mpsc::channel();
            scope.spawn(move || entered.send(gate.enter(9)).unwrap());
            assert!(seen.recv_timeout(Duration::from_millis(200)).is_err());
            gate.close();
            assert_eq!(seen.recv_timeout(Duration::from_secs(10)), Ok(false));
        });
    }
}
