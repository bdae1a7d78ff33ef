//! Inspector state: the frame index, the selection, the field tree, filters and the replay.
//!
//! [`App::apply`] is the only way state changes from input; worker results come in through
//! [`App::pump`] / [`App::wait_idle`]. Nothing here draws or touches the terminal.

// Indexing cannot panic here: views cycle modulo `View::ALL.len()`; event ranges are clamped to the
// list's length.
#![allow(clippy::indexing_slicing)]

use std::collections::HashSet;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rocescope_dissectors::stack::DissectOptions;

use super::InspectConfig;
use super::layout::{self, Areas, Hit};
pub use super::tree::{FrameDetail, TreeNode};
use super::worker::{self, ReplayData, Update, WorkerCfg, Workers};
use crate::capture::frame_index::FrameIndex;
use crate::capture::index::FrameFile;
use crate::filter::{Filter, FilterError, FrameMarks};
use crate::frame::FrameView;
use crate::frame::summary::{Summarizer, SummaryLine};
use crate::replay::between::{Between, BetweenEvent};
use crate::replay::{Finding, Kind};
use crate::units::rel_time;

/// The screens of the inspector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Frames,
    Flows,
    Events,
    Psn,
    Pfc,
}

impl View {
    pub const ALL: [View; 5] = [
        View::Frames,
        View::Flows,
        View::Events,
        View::Psn,
        View::Pfc,
    ];

    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            View::Frames => "Frames",
            View::Flows => "Flows",
            View::Events => "Events",
            View::Psn => "PSN chart",
            View::Pfc => "PFC timeline",
        }
    }
}

/// Which pane of the frames screen takes the arrow keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Tree,
}

/// What keys mean right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing in the filter bar.
    Filter,
    Help,
}

/// `f`: the list shows matching frames only; `/`: matches are found with `n`/`N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKind {
    Display,
    Search,
}

/// Everything the user can ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Enter: expand/collapse in the tree, filter to a flow, jump to an event's frame.
    Enter,
    Expand,
    Collapse,
    NextPane,
    Show(View),
    OpenFilter(FilterKind),
    FilterChar(char),
    FilterBackspace,
    FilterLeft,
    FilterRight,
    FilterSubmit,
    FilterCancel,
    /// Esc in normal mode: drop the display filter and the search.
    ClearFilter,
    NextMatch,
    PrevMatch,
    Help,
    CloseHelp,
    /// A pointer press at a screen position (resolved through [`layout::hit`]).
    Click {
        column: u16,
        row: u16,
    },
    /// What a mouse event was over, already resolved by the input mapping; `scroll` is the
    /// wheel's rows (none for a press).
    Point {
        hit: Hit,
        scroll: Option<isize>,
    },
    ScrollUp {
        column: u16,
        row: u16,
    },
    ScrollDown {
        column: u16,
        row: u16,
    },
    Resize {
        width: u16,
        height: u16,
    },
    /// `--tap`: show the other tap's frames.
    SwitchTap,
}

/// A filter being applied, with the frames it matched so far.
#[derive(Debug)]
pub struct Active {
    pub text: String,
    pub generation: u64,
    /// Matching frame numbers, ascending.
    pub matches: Vec<u64>,
    pub done: bool,
    stop: Arc<AtomicBool>,
}

/// The replay's results as the views need them.
#[derive(Debug)]
pub enum ReplayState {
    Running { frames: u64 },
    Done(Box<ReplayData>),
    Failed(String),
}

/// Two capture points (`inspect --tap A --tap B`): what happened between them, computed once on
/// a thread of its own and kept when the inspector switches from one tap to the other.
#[derive(Debug)]
pub enum BetweenState {
    Running(Receiver<Result<Box<Between>, String>>),
    Done(Box<Between>),
    Failed(String),
}

/// The two taps and which one the frame list shows.
#[derive(Debug)]
pub struct Taps {
    pub paths: Vec<PathBuf>,
    /// 0 or 1.
    pub shown: usize,
    pub between: BetweenState,
    /// What the inspector was opened with, to open the other tap the same way.
    cfg: InspectConfig,
}

impl Taps {
    /// The matcher's results, when they are done.
    #[must_use]
    pub fn between(&self) -> Option<&Between> {
        match &self.between {
            BetweenState::Done(b) => Some(b),
            _ => None,
        }
    }
}

/// The inspector.
#[derive(Debug)]
pub struct App {
    pub name: String,
    /// `--tap A --tap B`: the two taps (`None` for one capture).
    pub taps: Option<Taps>,
    pub file: Option<FrameFile>,
    pub index: FrameIndex,
    pub index_done: bool,
    /// Opening or indexing problem, shown in the status line.
    pub error: Option<String>,
    pub roce_ports: Vec<u16>,
    pub rd_as_rd: bool,
    pub summarizer: Summarizer,
    pub view: View,
    pub focus: Focus,
    pub mode: Mode,
    pub size: (u16, u16),
    /// Selected row of the frame list, and its first visible row.
    pub sel: usize,
    pub top: usize,
    /// `G` pressed while indexing: follow the end.
    follow_end: bool,
    /// A frame to select once it is indexed / matched.
    pending_frame: Option<u64>,
    pub detail: Option<FrameDetail>,
    pub collapsed: HashSet<String>,
    /// Selected line among the visible tree lines.
    pub tree_sel: usize,
    pub filter_kind: FilterKind,
    pub filter_input: String,
    /// Cursor in characters.
    pub filter_cursor: usize,
    pub filter_error: Option<FilterError>,
    pub display: Option<Active>,
    pub search: Option<Active>,
    pub replay: ReplayState,
    pub flow_sel: usize,
    pub event_sel: usize,
    pub should_quit: bool,
    /// A one-line message for the status bar.
    pub notice: Option<String>,
    /// Live: frames the kernel dropped (capture drops, not network loss).
    pub kernel_drops: Option<u64>,
    generation: u64,
    workers: Workers,
}

impl Drop for App {
    fn drop(&mut self) {
        // the workers stop with their handle; the filter scans have their own flags
        for a in [&self.display, &self.search].into_iter().flatten() {
            a.stop.store(true, Ordering::Relaxed);
        }
    }
}

impl App {
    /// Opens the capture and starts the index and replay workers. Never fails: a capture that
    /// cannot be read is an error line in the UI.
    #[must_use]
    pub fn open(cfg: &InspectConfig) -> App {
        Self::open_with(cfg, None)
    }

    /// [`App::open`]; live, capturing from `source` (already open) when it is given.
    #[must_use]
    pub fn open_with(cfg: &InspectConfig, source: Option<crate::live::LiveSource>) -> App {
        let mut app = Self::open_one(cfg, source);
        if let [a, b] = cfg.taps.as_slice() {
            let (tx, rx) = std::sync::mpsc::channel();
            let taps = vec![a.clone(), b.clone()];
            let engine = crate::replay::EngineConfig {
                link_bps: cfg.link_bps,
                roce_ports: cfg.roce_ports.clone(),
                rd_as_rd: cfg.rd_as_rd,
                ..crate::replay::EngineConfig::default()
            };
            // the whole of both files: no stop flag (the process ends with the inspector)
            let spawned = std::thread::Builder::new()
                .name("between".into())
                .spawn(move || {
                    let r = crate::replay::taps::run(&taps, &engine, 1_000_000_000)
                        .map(|(_, between)| Box::new(between))
                        .map_err(|e| format!("{e:#}"));
                    let _ = tx.send(r);
                });
            let between = match spawned {
                Ok(_) => BetweenState::Running(rx),
                Err(e) => BetweenState::Failed(format!("cannot start the matcher: {e}")),
            };
            app.set_taps(Taps {
                paths: cfg.taps.clone(),
                shown: 0,
                between,
                cfg: cfg.clone(),
            });
        }
        app
    }

    fn set_taps(&mut self, taps: Taps) {
        self.name = format!("{} (tap {} of 2; T: the other)", self.name, taps.shown);
        self.taps = Some(taps);
    }

    /// Show the other tap's frames (at `frame` when given), keeping what is known of both.
    fn switch_tap(&mut self, to: usize, frame: Option<u64>) {
        let Some(taps) = self.taps.take() else { return };
        let Some(path) = taps.paths.get(to).cloned() else {
            self.taps = Some(taps);
            return;
        };
        let mut cfg = taps.cfg.clone();
        cfg.capture = path;
        cfg.filter = None;
        let mut next = Self::open_one(&cfg, None);
        next.size = self.size;
        next.set_taps(Taps { shown: to, ..taps });
        if let Some(n) = frame {
            next.jump_to_frame(n);
        }
        next.notice = Some(format!("tap {to}: {}", cfg.capture.display()));
        *self = next;
    }

    /// The inspector on one capture.
    fn open_one(cfg: &InspectConfig, source: Option<crate::live::LiveSource>) -> App {
        let wcfg = WorkerCfg {
            path: cfg.capture.clone(),
            roce_ports: cfg.roce_ports.clone(),
            rd_as_rd: cfg.rd_as_rd,
            link_bps: cfg.link_bps,
            live: cfg.live.clone(),
            spooled: Arc::default(),
        };
        let name = match &cfg.live {
            Some(live) => format!("live on {}", live.iface),
            None => cfg.capture.file_name().map_or_else(
                || cfg.capture.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
        };
        let (file, error) = match FrameFile::open(&cfg.capture) {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(format!("{}: {e}", cfg.capture.display()))),
        };
        let mut app = App {
            name,
            taps: None,
            file,
            index: FrameIndex::new(),
            index_done: false,
            error,
            roce_ports: cfg.roce_ports.clone(),
            rd_as_rd: cfg.rd_as_rd,
            summarizer: Summarizer::new(cfg.link_bps),
            view: View::Frames,
            focus: Focus::List,
            mode: Mode::Normal,
            size: (120, 40),
            sel: 0,
            top: 0,
            // live: the list follows the newest frame until the user moves up
            follow_end: cfg.live.is_some(),
            pending_frame: None,
            detail: None,
            collapsed: HashSet::new(),
            tree_sel: 0,
            filter_kind: FilterKind::Display,
            filter_input: String::new(),
            filter_cursor: 0,
            filter_error: None,
            display: None,
            search: None,
            replay: ReplayState::Running { frames: 0 },
            flow_sel: 0,
            event_sel: 0,
            should_quit: false,
            notice: None,
            kernel_drops: None,
            generation: 0,
            workers: Workers::new(wcfg),
        };
        if app.file.is_some() {
            app.workers.start_with(source);
        } else {
            app.index_done = true;
            app.replay = ReplayState::Failed("capture not readable".into());
        }
        if let Some(f) = &cfg.filter {
            app.filter_kind = FilterKind::Display;
            app.filter_input.clone_from(f);
            app.filter_cursor = f.chars().count();
            app.submit_filter();
        }
        app
    }

    // ---- workers -------------------------------------------------------------------------

    /// Applies every worker update that has arrived; true when something changed.
    pub fn pump(&mut self) -> bool {
        self.workers.tick();
        let mut changed = self.pump_between(None);
        while let Some(u) = self.workers.try_recv() {
            self.update(u);
            changed = true;
        }
        changed
    }

    /// The matcher's result, if it came (waiting up to `wait` for it); true when it did.
    fn pump_between(&mut self, wait: Option<Duration>) -> bool {
        let Some(taps) = &mut self.taps else {
            return false;
        };
        let BetweenState::Running(rx) = &taps.between else {
            return false;
        };
        let got = match wait {
            Some(t) => rx.recv_timeout(t).ok(),
            None => rx.try_recv().ok(),
        };
        match got {
            Some(Ok(b)) => taps.between = BetweenState::Done(b),
            Some(Err(e)) => taps.between = BetweenState::Failed(e),
            None => return false,
        }
        true
    }

    /// Blocks until the index, the replay and the filters are complete (or `timeout`).
    pub fn wait_idle(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.idle() {
            let left = deadline.saturating_duration_since(Instant::now());
            if self
                .taps
                .as_ref()
                .is_some_and(|t| matches!(t.between, BetweenState::Running(_)))
            {
                self.pump_between(Some(left.min(Duration::from_millis(20))));
                if let Some(u) = self.workers.try_recv() {
                    self.update(u);
                }
                if left.is_zero() {
                    return;
                }
                continue;
            }
            match self.workers.recv_timeout(left) {
                Ok(u) => self.update(u),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
            }
        }
        self.pump();
    }

    /// Nothing is running in the background.
    #[must_use]
    pub fn idle(&self) -> bool {
        self.index_done
            && !matches!(self.replay, ReplayState::Running { .. })
            && self
                .taps
                .as_ref()
                .is_none_or(|t| !matches!(t.between, BetweenState::Running(_)))
            && self.display.as_ref().is_none_or(|a| a.done)
            && self.search.as_ref().is_none_or(|a| a.done)
    }

    /// Applies one worker message.
    pub fn update(&mut self, u: Update) {
        match u {
            Update::Indexed(chunk) => {
                self.index.extend(&chunk);
            }
            Update::IndexedPart(part) => self.index.append(*part),
            Update::IndexDone(err) => {
                self.index_done = true;
                if let Some(e) = err {
                    self.error = Some(e);
                }
            }
            // live: the previous replay stays on screen while the next one runs
            Update::ReplayProgress(frames) => {
                if !matches!(self.replay, ReplayState::Done(_)) {
                    self.replay = ReplayState::Running { frames };
                }
            }
            Update::KernelDrops(n) => self.kernel_drops = Some(n),
            Update::ReplayDone(Ok(data)) => self.replay = ReplayState::Done(data),
            Update::ReplayDone(Err(e)) => self.replay = ReplayState::Failed(e),
            Update::Matches { generation, frames } => {
                for a in [&mut self.display, &mut self.search].into_iter().flatten() {
                    if a.generation == generation {
                        a.matches.extend_from_slice(&frames);
                    }
                }
            }
            Update::MatchesDone { generation } => {
                for a in [&mut self.display, &mut self.search].into_iter().flatten() {
                    if a.generation == generation {
                        a.done = true;
                    }
                }
            }
        }
        self.settle();
    }

    /// Brings the selection in line with what is known now (new rows, pending jumps).
    fn settle(&mut self) {
        if let Some(n) = self.pending_frame
            && let Some(row) = self.row_of_frame(n)
        {
            self.pending_frame = None;
            self.select_row(row);
        }
        if self.follow_end {
            let rows = self.row_count();
            if rows > 0 {
                self.select_row(rows - 1);
            }
            if self.rows_complete() {
                self.follow_end = false;
            }
        }
        let rows = self.row_count();
        if rows > 0 && self.sel >= rows {
            self.sel = rows - 1;
        }
        self.scroll_to_sel();
        self.load_detail();
    }

    // ---- the frame list ------------------------------------------------------------------

    /// Rows of the frame list (all frames, or the display filter's matches).
    #[must_use]
    pub fn row_count(&self) -> usize {
        match &self.display {
            Some(a) => a.matches.len(),
            None => self.index.len(),
        }
    }

    /// All rows are known (index or filter scan complete).
    #[must_use]
    pub fn rows_complete(&self) -> bool {
        match &self.display {
            Some(a) => a.done,
            None => self.index_done,
        }
    }

    /// Frame number of a list row, when indexed.
    #[must_use]
    pub fn row_frame(&self, row: usize) -> Option<u64> {
        let n = match &self.display {
            Some(a) => *a.matches.get(row)?,
            None => row as u64 + 1,
        };
        (n >= 1 && n as usize <= self.index.len()).then_some(n)
    }

    fn row_of_frame(&self, number: u64) -> Option<usize> {
        if number == 0 || number as usize > self.index.len() {
            return None;
        }
        match &self.display {
            Some(a) => a.matches.binary_search(&number).ok(),
            None => Some(number as usize - 1),
        }
    }

    /// The screen's areas as they are now.
    #[must_use]
    pub fn areas(&self) -> Areas {
        self.areas_of(ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1))
    }

    /// The areas of a screen of `area`'s size in the current state (the renderer's frame may
    /// not be the size the app was last told).
    #[must_use]
    pub fn areas_of(&self, area: ratatui::layout::Rect) -> Areas {
        let filter_lines = if self.filter_error.is_some() { 2 } else { 1 };
        let mut a = layout::areas(area.width, area.height, filter_lines);
        for r in [
            &mut a.tabs,
            &mut a.main,
            &mut a.list,
            &mut a.tree,
            &mut a.hex,
            &mut a.filter,
            &mut a.status,
        ] {
            r.x += area.x;
            r.y += area.y;
        }
        a
    }

    /// Visible rows of the frame list.
    #[must_use]
    pub fn list_height(&self) -> usize {
        layout::list_rows(self.areas().list)
    }

    /// First visible line of the field tree.
    #[must_use]
    pub fn tree_top(&self) -> usize {
        layout::tree_top(self.areas().tree, self.tree_sel, self.visible_tree().len())
    }

    fn select_row(&mut self, row: usize) {
        let rows = self.row_count();
        self.sel = if rows == 0 { 0 } else { row.min(rows - 1) };
        self.scroll_to_sel();
        self.load_detail();
    }

    fn scroll_to_sel(&mut self) {
        let h = self.list_height();
        if self.sel < self.top {
            self.top = self.sel;
        } else if self.sel >= self.top + h {
            self.top = self.sel + 1 - h;
        }
    }

    /// The frame with number `number` read and dissected, handed to `f`.
    pub fn with_frame<R>(&self, number: u64, f: impl FnOnce(&FrameView<'_>) -> R) -> Option<R> {
        let file = self.file.as_ref()?;
        let entry = self
            .index
            .get(usize::try_from(number).ok()?.checked_sub(1)?)?;
        let mut buf = Vec::new();
        file.read(&entry, &mut buf).ok()?;
        let first = self.index.first_time_ns().unwrap_or(0);
        let options = DissectOptions {
            roce_ports: &self.roce_ports,
            rd_as_rd: self.rd_as_rd,
            ..DissectOptions::default()
        };
        let frame = entry.frame(number, &buf);
        let view = FrameView::new(&frame, &options, first);
        Some(f(&view))
    }

    /// The list columns of one frame: number, time, source, destination, protocol, length,
    /// info and the analysis marks.
    #[must_use]
    pub fn row_text(&self, number: u64) -> Option<RowText> {
        self.with_frame(number, |view| {
            let mut s = SummaryLine::default();
            self.summarizer.summarize(view, &mut s);
            let mut time = String::new();
            let _ = rel_time(&mut time, view.rel_ns);
            let mut marks: Vec<&'static str> = Vec::new();
            for f in self.findings(number) {
                let m = mark(f.kind);
                if !marks.contains(&m) {
                    marks.push(m);
                }
            }
            if marks.is_empty() && !matches!(self.replay, ReplayState::Done(_)) {
                if view.truncated {
                    marks.push("trunc");
                } else if view.malformed {
                    marks.push("malf");
                }
            }
            RowText {
                number,
                time,
                summary: s,
                len: view.frame.orig_len,
                marks,
                problem: view.truncated || view.malformed,
            }
        })
    }

    /// The replay's findings on frame `number`.
    #[must_use]
    pub fn findings(&self, number: u64) -> &[Finding] {
        let ReplayState::Done(d) = &self.replay else {
            return &[];
        };
        let ev = &d.replay.events;
        let a = ev.partition_point(|e| e.frame < number);
        let b = ev.partition_point(|e| e.frame <= number);
        &ev[a..b]
    }

    fn load_detail(&mut self) {
        let Some(number) = self.row_frame(self.sel) else {
            self.detail = None;
            return;
        };
        if self.detail.as_ref().is_some_and(|d| d.number == number) {
            return;
        }
        self.detail = self.with_frame(number, |view| {
            super::tree::detail(number, view, self.findings(number))
        });
        let vis = self.visible_tree().len();
        if self.tree_sel >= vis {
            self.tree_sel = vis.saturating_sub(1);
        }
    }

    /// Indices into `detail.nodes` of the lines shown (children of collapsed groups hidden).
    #[must_use]
    pub fn visible_tree(&self) -> Vec<usize> {
        let Some(d) = &self.detail else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(d.nodes.len());
        let mut hide_below: Option<u16> = None;
        for (i, n) in d.nodes.iter().enumerate() {
            if let Some(h) = hide_below {
                if n.depth > h {
                    continue;
                }
                hide_below = None;
            }
            out.push(i);
            if n.group && self.collapsed.contains(&n.path) {
                hide_below = Some(n.depth);
            }
        }
        out
    }

    /// The selected tree line, if any.
    #[must_use]
    pub fn selected_node(&self) -> Option<&TreeNode> {
        let idx = *self.visible_tree().get(self.tree_sel)?;
        self.detail.as_ref()?.nodes.get(idx)
    }

    /// Bytes to highlight in the hex pane.
    #[must_use]
    pub fn highlight(&self) -> Option<Range<usize>> {
        if self.focus != Focus::Tree {
            return None;
        }
        self.selected_node().map(|n| n.range.clone())
    }

    // ---- replay views --------------------------------------------------------------------

    /// The replay, when it is done.
    #[must_use]
    pub fn replay_data(&self) -> Option<&ReplayData> {
        match &self.replay {
            ReplayState::Done(d) => Some(d),
            _ => None,
        }
    }

    fn flow_count(&self) -> usize {
        self.replay_data().map_or(0, |d| d.replay.flows.len())
    }

    fn event_count(&self) -> usize {
        let between = self
            .taps
            .as_ref()
            .and_then(Taps::between)
            .map_or(0, |b| b.events.len());
        self.replay_data().map_or(0, |d| d.replay.events.len()) + between
    }

    /// The `i`-th row of the events view when it is an event between the taps (they follow
    /// the shown tap's own events).
    #[must_use]
    pub fn between_event(&self, i: usize) -> Option<&BetweenEvent> {
        let own = self.replay_data().map_or(0, |d| d.replay.events.len());
        let b = self.taps.as_ref().and_then(Taps::between)?;
        b.events.get(i.checked_sub(own)?)
    }

    /// Where an event between the taps is best seen: (tap, frame) in its flow's upstream tap
    /// where it has a frame there, else in the other.
    #[must_use]
    pub fn between_target(&self, e: &BetweenEvent) -> Option<(usize, u64)> {
        let b = self.taps.as_ref().and_then(Taps::between)?;
        let up = usize::from(b.flows.get(e.flow as usize)?.upstream.unwrap_or(0) & 1);
        match (e.frames[up], e.frames[1 - up]) {
            (Some(n), _) => Some((up, n)),
            (None, Some(n)) => Some((1 - up, n)),
            (None, None) => None,
        }
    }

    /// Jump to a frame in the frame list (dropping a display filter that hides it).
    pub fn jump_to_frame(&mut self, number: u64) {
        self.view = View::Frames;
        self.focus = Focus::List;
        if let Some(a) = &self.display
            && a.matches.binary_search(&number).is_err()
            && a.done
        {
            self.drop_display();
        }
        match self.row_of_frame(number) {
            Some(row) => {
                // Centre the frame when it is off screen.
                let h = self.list_height();
                if row < self.top || row >= self.top + h {
                    self.top = row.saturating_sub(h / 2);
                }
                self.select_row(row);
            }
            None => self.pending_frame = Some(number),
        }
    }

    fn drop_display(&mut self) {
        if let Some(a) = self.display.take() {
            a.stop.store(true, Ordering::Relaxed);
        }
        let cur = self.detail.as_ref().map(|d| d.number);
        self.sel = cur.and_then(|n| self.row_of_frame(n)).unwrap_or(0);
        self.top = self.sel.saturating_sub(self.list_height() / 2);
        self.scroll_to_sel();
        self.load_detail();
    }

    // ---- actions -------------------------------------------------------------------------

    /// Applies one action.
    pub fn apply(&mut self, action: Action) {
        self.notice = None;
        match action {
            Action::SwitchTap => match self.taps.as_ref().map(|t| 1 - t.shown) {
                Some(to) => self.switch_tap(to, None),
                None => {
                    self.notice = Some("one capture (two: inspect --tap A --tap B)".into());
                }
            },
            Action::Quit => self.should_quit = true,
            Action::Resize { width, height } => {
                self.size = (width, height);
                self.scroll_to_sel();
            }
            Action::Help => self.mode = Mode::Help,
            Action::CloseHelp => self.mode = Mode::Normal,
            Action::Show(v) => {
                self.view = v;
                self.mode = Mode::Normal;
            }
            Action::NextPane => {
                if self.view == View::Frames {
                    self.focus = match self.focus {
                        Focus::List => Focus::Tree,
                        Focus::Tree => Focus::List,
                    };
                } else {
                    let i = View::ALL.iter().position(|v| *v == self.view).unwrap_or(0);
                    self.view = View::ALL[(i + 1) % View::ALL.len()];
                }
            }
            Action::OpenFilter(kind) => {
                self.mode = Mode::Filter;
                self.filter_kind = kind;
                let current = match kind {
                    FilterKind::Display => self.display.as_ref(),
                    FilterKind::Search => self.search.as_ref(),
                };
                self.filter_input = current.map(|a| a.text.clone()).unwrap_or_default();
                self.filter_cursor = self.filter_input.chars().count();
                self.filter_error = None;
            }
            Action::FilterChar(c) => {
                let at = byte_at(&self.filter_input, self.filter_cursor);
                self.filter_input.insert(at, c);
                self.filter_cursor += 1;
                self.filter_error = None;
            }
            Action::FilterBackspace => {
                if self.filter_cursor > 0 {
                    self.filter_cursor -= 1;
                    let at = byte_at(&self.filter_input, self.filter_cursor);
                    self.filter_input.remove(at);
                }
                self.filter_error = None;
            }
            Action::FilterLeft => self.filter_cursor = self.filter_cursor.saturating_sub(1),
            Action::FilterRight => {
                self.filter_cursor =
                    (self.filter_cursor + 1).min(self.filter_input.chars().count());
            }
            Action::FilterSubmit => self.submit_filter(),
            Action::FilterCancel => {
                self.mode = Mode::Normal;
                self.filter_error = None;
            }
            Action::ClearFilter => {
                if let Some(a) = self.search.take() {
                    a.stop.store(true, Ordering::Relaxed);
                }
                if self.display.is_some() {
                    self.drop_display();
                }
            }
            Action::NextMatch => self.next_match(true),
            Action::PrevMatch => self.next_match(false),
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => {
                let h = self.page();
                self.move_by(-h);
            }
            Action::PageDown => {
                let h = self.page();
                self.move_by(h);
            }
            Action::Top => self.move_to(0, false),
            Action::Bottom => self.move_to(usize::MAX, true),
            Action::Enter => self.enter(),
            Action::Expand => self.set_expanded(Some(true)),
            Action::Collapse => self.set_expanded(Some(false)),
            Action::Click { column, row } => self.click(column, row, None),
            Action::ScrollUp { column, row } => self.click(column, row, Some(-3)),
            Action::ScrollDown { column, row } => self.click(column, row, Some(3)),
            Action::Point { hit, scroll } => self.point(hit, scroll),
        }
    }

    fn page(&self) -> isize {
        isize::try_from(self.list_height()).unwrap_or(1)
    }

    fn submit_filter(&mut self) {
        let text = self.filter_input.trim().to_owned();
        if text.is_empty() {
            self.mode = Mode::Normal;
            match self.filter_kind {
                FilterKind::Display => {
                    if self.display.is_some() {
                        self.drop_display();
                    }
                }
                FilterKind::Search => {
                    if let Some(a) = self.search.take() {
                        a.stop.store(true, Ordering::Relaxed);
                    }
                }
            }
            return;
        }
        let filter = match Filter::compile_with_marks(&self.filter_input) {
            Ok(f) => f,
            Err(e) => {
                self.mode = Mode::Filter;
                self.filter_error = Some(e);
                return;
            }
        };
        // `loss`, `ooo`, `dup` and `retrans` come from the replay's events.
        let marks = if filter.uses_marks() {
            let ReplayState::Done(data) = &self.replay else {
                self.mode = Mode::Filter;
                self.filter_error = Some(FilterError {
                    filter: self.filter_input.clone(),
                    column: 1,
                    message: "the replay is still running: loss, ooo, dup and retrans can be used once the flow table is ready".to_owned(),
                });
                return;
            };
            Some(FrameMarks::from_events(&data.replay.events))
        } else {
            None
        };
        self.mode = Mode::Normal;
        self.filter_error = None;
        self.generation += 1;
        let stop = if self.file.is_some() {
            self.workers.filter(filter, marks, self.generation)
        } else {
            Arc::new(AtomicBool::new(true))
        };
        let active = Active {
            text: self.filter_input.clone(),
            generation: self.generation,
            matches: Vec::new(),
            done: self.file.is_none(),
            stop,
        };
        let old = match self.filter_kind {
            FilterKind::Display => {
                self.sel = 0;
                self.top = 0;
                self.detail = None;
                self.view = View::Frames;
                self.display.replace(active)
            }
            FilterKind::Search => self.search.replace(active),
        };
        if let Some(a) = old {
            a.stop.store(true, Ordering::Relaxed);
        }
        self.load_detail();
    }

    fn next_match(&mut self, forward: bool) {
        let cur = self.row_frame(self.sel).unwrap_or(0);
        let target = match (&self.search, &self.display) {
            (Some(s), _) => {
                if forward {
                    let i = s.matches.partition_point(|&m| m <= cur);
                    s.matches.get(i).copied()
                } else {
                    let i = s.matches.partition_point(|&m| m < cur);
                    i.checked_sub(1).and_then(|i| s.matches.get(i).copied())
                }
            }
            (None, Some(_)) => {
                // With only a display filter every row matches: step through them.
                self.move_by(if forward { 1 } else { -1 });
                return;
            }
            (None, None) => {
                self.notice = Some("no search: press / to search".into());
                return;
            }
        };
        match target {
            Some(n) => self.jump_to_frame(n),
            None => {
                let done = self.search.as_ref().is_some_and(|s| s.done);
                self.notice = Some(if done {
                    "no more matches".into()
                } else {
                    "no more matches yet (still searching)".into()
                });
            }
        }
    }

    fn move_by(&mut self, delta: isize) {
        let (cur, count) = self.cursor();
        let next = if delta < 0 {
            cur.saturating_sub(delta.unsigned_abs())
        } else {
            cur.saturating_add(delta.unsigned_abs())
        };
        self.move_to(next.min(count.saturating_sub(1)), false);
    }

    /// The selected index and the length of what the arrow keys move in.
    fn cursor(&self) -> (usize, usize) {
        match (self.view, self.focus) {
            (View::Frames, Focus::List) => (self.sel, self.row_count()),
            (View::Frames, Focus::Tree) => (self.tree_sel, self.visible_tree().len()),
            (View::Flows | View::Psn, _) => (self.flow_sel, self.flow_count()),
            (View::Events, _) => (self.event_sel, self.event_count()),
            (View::Pfc, _) => (0, 0),
        }
    }

    fn move_to(&mut self, to: usize, end: bool) {
        let (_, count) = self.cursor();
        let to = to.min(count.saturating_sub(1));
        match (self.view, self.focus) {
            (View::Frames, Focus::List) => {
                self.follow_end = end && !self.rows_complete();
                self.pending_frame = None;
                self.select_row(to);
            }
            (View::Frames, Focus::Tree) => self.tree_sel = to,
            (View::Flows | View::Psn, _) => self.flow_sel = to,
            (View::Events, _) => self.event_sel = to,
            (View::Pfc, _) => {}
        }
    }

    fn enter(&mut self) {
        match self.view {
            View::Frames => match self.focus {
                Focus::List => self.focus = Focus::Tree,
                Focus::Tree => self.set_expanded(None),
            },
            View::Flows | View::Psn => {
                let Some(key) = self
                    .replay_data()
                    .and_then(|d| Some(d.replay.key(d.replay.flows.get(self.flow_sel)?)))
                else {
                    return;
                };
                self.filter_kind = FilterKind::Display;
                self.filter_input = worker::flow_filter(key.src, key.dst, key.dest_qp);
                self.filter_cursor = self.filter_input.chars().count();
                self.submit_filter();
            }
            View::Events => {
                if let Some(n) = self
                    .replay_data()
                    .and_then(|d| d.replay.events.get(self.event_sel))
                    .map(|e| e.frame)
                {
                    self.jump_to_frame(n);
                } else if let Some((tap, n)) = self
                    .between_event(self.event_sel)
                    .and_then(|e| self.between_target(e))
                {
                    // a packet dropped between the taps is seen in the tap upstream
                    if self.taps.as_ref().is_some_and(|t| t.shown == tap) {
                        self.jump_to_frame(n);
                    } else {
                        self.switch_tap(tap, Some(n));
                    }
                }
            }
            View::Pfc => {}
        }
    }

    /// Expands (`Some(true)`), collapses (`Some(false)`) or toggles the selected tree group.
    fn set_expanded(&mut self, to: Option<bool>) {
        if self.view != View::Frames || self.focus != Focus::Tree {
            return;
        }
        let Some(node) = self.selected_node() else {
            return;
        };
        if !node.group {
            return;
        }
        let path = node.path.clone();
        let expand = to.unwrap_or_else(|| self.collapsed.contains(&path));
        if expand {
            self.collapsed.remove(&path);
        } else {
            self.collapsed.insert(path);
        }
    }

    fn click(&mut self, column: u16, row: u16, scroll: Option<isize>) {
        let hit = layout::hit(&self.areas(), self.view == View::Frames, column, row);
        self.point(hit, scroll);
    }

    /// A pointer press (`scroll` `None`) or wheel turn over `hit`.
    fn point(&mut self, hit: Hit, scroll: Option<isize>) {
        if self.mode != Mode::Normal {
            return;
        }
        match (hit, scroll) {
            (Hit::List(_), Some(d)) => {
                self.focus = Focus::List;
                self.move_by(d);
            }
            (Hit::List(row), None) => {
                self.focus = Focus::List;
                if let Some(to) = row
                    .map(|r| self.top + r)
                    .filter(|&to| to < self.row_count())
                {
                    self.select_row(to);
                }
            }
            (Hit::Tree(_), Some(d)) => {
                self.focus = Focus::Tree;
                self.move_by(d);
            }
            (Hit::Tree(line), None) => {
                self.focus = Focus::Tree;
                let first = self.tree_top();
                if let Some(to) = line
                    .map(|l| first + l)
                    .filter(|&to| to < self.visible_tree().len())
                {
                    if to == self.tree_sel {
                        self.set_expanded(None);
                    }
                    self.tree_sel = to;
                }
            }
            (Hit::Main(_), Some(d)) => self.move_by(d),
            (Hit::Main(Some(row)), None) if self.view != View::Frames => {
                // Tables: rows from the top the table scrolled to.
                let h = layout::table_rows(self.areas().main);
                let (cur, count) = self.cursor();
                let to = layout::table_top(cur, h) + row;
                if to < count {
                    self.move_to(to, false);
                }
            }
            (Hit::Tab(column), None) => {
                let titles = View::ALL.map(View::title);
                if let Some(i) = layout::tab_at(column, titles) {
                    self.view = View::ALL[i];
                }
            }
            _ => {}
        }
    }
}

/// Columns of one frame-list row.
#[derive(Debug)]
pub struct RowText {
    pub number: u64,
    pub time: String,
    pub summary: SummaryLine,
    pub len: u32,
    pub marks: Vec<&'static str>,
    pub problem: bool,
}

/// Short name of a finding for the list's mark column.
#[must_use]
pub fn mark(kind: Kind) -> &'static str {
    match kind {
        Kind::PsnGap => "gap",
        Kind::OutOfOrder => "ooo",
        Kind::Duplicate => "dup",
        Kind::Retransmission => "retx",
        Kind::ImpliedTimeout => "tmo",
        Kind::NakPsnSeqErr
        | Kind::NakInvalidRequest
        | Kind::NakRemoteAccess
        | Kind::NakRemoteOp
        | Kind::NakInvalidRd => "nak",
        Kind::NakRnr => "rnr",
        Kind::ReadResponseGap => "rgap",
        Kind::UnansweredRead => "noresp",
        Kind::EcnCe => "ce",
        Kind::Cnp => "cnp",
        Kind::PfcPause => "pause",
        Kind::PfcResume => "resume",
        Kind::PfcStorm => "storm",
        Kind::IcrcError => "icrc",
        Kind::Malformed => "malf",
        Kind::Truncated => "trunc",
        Kind::NotCaptured => "nocap",
        Kind::GbnWrongStart
        | Kind::RepeatedNak
        | Kind::AckRegression
        | Kind::MsnRegression
        | Kind::ReadWrongRestart
        | Kind::ResponseAfterFatalNak => "conf",
        Kind::DroppedBetween => "dropb",
        Kind::CorruptedBetween => "corrb",
        Kind::ReorderedBetween => "reordb",
        Kind::TcpBthGap => "gap",
        Kind::TcpBthOutOfOrder => "ooo",
        Kind::TcpBthRetransmission => "retx",
        Kind::TcpBthDuplicate => "dup",
        Kind::TcpBthIcrcError => "icrc",
        Kind::TcpBthMissingFirst => "nofst",
        Kind::TcpBthImmediate => "imm",
        Kind::TcpBthReadPairing => "rdpair",
        Kind::TcpBthInconsistentRetransmit => "incons",
        Kind::TcpBthNoPayload => "nopay",
        Kind::TcpBthCoalesced => "coal",
        Kind::TcpBthSegContinuity => "seg",
        Kind::TcpBthOffsetMismatch
        | Kind::TcpBthContiguity
        | Kind::TcpBthMsnGap
        | Kind::TcpBthMsnRegression
        | Kind::TcpBthOpcodeGrammar
        | Kind::TcpBthLength => "bth",
    }
}

fn byte_at(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}
