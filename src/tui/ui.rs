//! Drawing only: `render(&App, &mut Frame)`. Nothing here changes the [`App`]; the frame list
//! reads the rows it shows from the capture file through the index (`&File` reads).

// Indexing cannot panic here: hex rows are cut with `min(len)`; tree nodes are indexed by positions
// the tree handed out.
#![allow(clippy::indexing_slicing)]

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table, TableState};

use super::app::{App, FilterKind, Focus, Mode, ReplayState, Taps, View};
use super::layout::{self, TAB_SEP, tab_label};
use super::widgets;
use crate::replay::FlowKey;
use crate::replay::between::{Between, BetweenEvent, FlowBetween};
use crate::replay::hash::FxHashMap;
use crate::units::Duration as Dur;

/// Draws the whole screen.
pub fn render(app: &App, frame: &mut Frame<'_>) {
    let area = frame.area();
    let areas = app.areas_of(area);
    render_tabs(app, frame, areas.tabs);
    match app.view {
        View::Frames => {
            render_list(app, frame, areas.list);
            render_detail(app, frame, areas.tree);
            render_hex(app, frame, areas.hex);
        }
        View::Flows => render_flows(app, frame, areas.main),
        View::Events => render_events(app, frame, areas.main),
        View::Psn => widgets::render_psn(app, frame, areas.main),
        View::Pfc => widgets::render_pfc(app, frame, areas.main),
    }
    render_filter(app, frame, areas.filter);
    render_status(app, frame, areas.status);
    if app.mode == Mode::Help {
        render_help(frame, frame.area());
    }
}

fn focus_block(title: String, focused: bool) -> Block<'static> {
    let style = if focused {
        Style::new().fg(Color::Cyan)
    } else {
        Style::new().fg(Color::DarkGray)
    };
    Block::bordered().title(title).border_style(style)
}

fn render_tabs(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let mut spans = vec![Span::raw(" ")];
    for (i, v) in View::ALL.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(TAB_SEP, Style::new().fg(Color::DarkGray)));
        }
        let style = if *v == app.view {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(tab_label(i, v.title()), style));
    }
    spans.push(Span::styled(
        format!("   rocescope inspect {}", app.name),
        Style::new().fg(Color::DarkGray),
    ));
    frame.render_widget(Line::from(spans), area);
}

/// Colour of a row by its first analysis mark.
fn mark_color(mark: &str) -> Option<Color> {
    Some(match mark {
        "gap" | "retx" | "tmo" | "icrc" | "malf" | "trunc" | "rgap" | "noresp" => Color::Red,
        "ooo" | "dup" => Color::Yellow,
        "nak" | "rnr" => Color::Magenta,
        "ce" | "cnp" => Color::Blue,
        "pause" | "resume" | "storm" => Color::Cyan,
        "conf" => Color::LightRed,
        "nocap" => Color::DarkGray,
        _ => return None,
    })
}

/// The frame list: the columns of `dissect -f text` plus the analysis marks.
pub fn render_list(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let rows_total = app.row_count();
    let mut title = format!(" Frames {}/{}", app.sel + 1, rows_total);
    if rows_total == 0 {
        title = " Frames ".into();
    }
    if let Some(a) = &app.display {
        title.push_str(&format!(" (filter: {})", a.text));
    }
    if !app.index_done {
        title.push_str(" (indexing…)");
    }
    title.push(' ');
    let block = focus_block(title, app.focus == Focus::List);
    let h = usize::from(area.height.saturating_sub(3));
    let mut rows = Vec::with_capacity(h);
    for r in app.top..(app.top + h).min(rows_total) {
        let Some(n) = app.row_frame(r) else { break };
        let Some(t) = app.row_text(n) else {
            rows.push(Row::new(vec![
                Cell::from(n.to_string()),
                Cell::from("cannot read frame"),
            ]));
            continue;
        };
        let mut style = Style::new();
        if let Some(c) = t.marks.first().and_then(|m| mark_color(m)) {
            style = style.fg(c);
        } else if t.problem {
            style = style.fg(Color::Red);
        }
        let searched = app
            .search
            .as_ref()
            .is_some_and(|s| s.matches.binary_search(&n).is_ok());
        if searched {
            style = style.add_modifier(Modifier::BOLD);
        }
        if r == app.sel {
            style = style.add_modifier(Modifier::REVERSED);
        }
        let s = &t.summary;
        rows.push(
            Row::new(vec![
                Cell::from(format!("{}{}", if searched { "*" } else { "" }, t.number)),
                Cell::from(t.time),
                Cell::from(s.src.clone()),
                Cell::from(s.dst.clone()),
                Cell::from(s.protocol.clone()),
                Cell::from(t.len.to_string()),
                Cell::from(t.marks.join(",")),
                Cell::from(s.info.clone()),
            ])
            .style(style),
        );
    }
    let header = Row::new(vec![
        "No.",
        "Time",
        "Source",
        "Destination",
        "Proto",
        "Length",
        "Mark",
        "Info",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(15),
        Constraint::Length(15),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Min(10),
    ];
    if rows.is_empty() {
        let msg = if let Some(e) = &app.error {
            Line::styled(format!("error: {e}"), Style::new().fg(Color::Red))
        } else if app.rows_complete() {
            Line::raw("no frames")
        } else {
            Line::raw("reading…")
        };
        frame.render_widget(Paragraph::new(msg).block(block), area);
        return;
    }
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .column_spacing(1)
            .block(block),
        area,
    );
}

/// The field tree of the selected frame.
pub fn render_detail(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let block = focus_block(" Fields ".into(), app.focus == Focus::Tree);
    let visible = app.visible_tree();
    let Some(d) = &app.detail else {
        frame.render_widget(block, area);
        return;
    };
    let top = super::layout::tree_top(area, app.tree_sel, visible.len());
    let h = usize::from(area.height.saturating_sub(2));
    let mut lines = Vec::with_capacity(h);
    for (i, &idx) in visible.iter().enumerate().skip(top).take(h) {
        let n = &d.nodes[idx];
        let marker = if n.group {
            if app.collapsed.contains(&n.path) {
                "▸ "
            } else {
                "▾ "
            }
        } else {
            "  "
        };
        let indent = "  ".repeat(usize::from(n.depth));
        let mut style = Style::new();
        if n.text.starts_with("Problem:") || n.text.starts_with("Analysis:") {
            style = style.fg(Color::Red);
        }
        if i == app.tree_sel && app.focus == Focus::Tree {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(format!("{indent}{marker}{}", n.text), style));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// Hex and ASCII of the selected frame, the selected field highlighted.
pub fn render_hex(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let Some(d) = &app.detail else {
        frame.render_widget(focus_block(" Bytes ".into(), false), area);
        return;
    };
    let hl = app.highlight().unwrap_or(0..0);
    let title = if hl.is_empty() {
        format!(" Bytes ({}) ", d.bytes.len())
    } else {
        format!(" Bytes ({}) [{}..{}] ", d.bytes.len(), hl.start, hl.end)
    };
    let block = focus_block(title, false);
    let h = usize::from(area.height.saturating_sub(2)).max(1);
    let lines_total = d.bytes.len().div_ceil(16);
    let first = if hl.is_empty() {
        0
    } else {
        let want = hl.start / 16;
        if want < h {
            0
        } else {
            want.saturating_sub(h / 3)
        }
    }
    .min(lines_total.saturating_sub(h));
    let on = Style::new()
        .add_modifier(Modifier::REVERSED)
        .fg(Color::Yellow);
    let mut lines = Vec::with_capacity(h);
    for l in (first..lines_total).take(h) {
        let start = l * 16;
        let chunk = &d.bytes[start..(start + 16).min(d.bytes.len())];
        let mut spans = vec![Span::styled(
            format!("{start:04x}  "),
            Style::new().fg(Color::DarkGray),
        )];
        for i in 0..16 {
            let sep = if i == 8 { " " } else { "" };
            match chunk.get(i) {
                Some(b) => {
                    let style = if hl.contains(&(start + i)) {
                        on
                    } else {
                        Style::new()
                    };
                    spans.push(Span::raw(sep));
                    spans.push(Span::styled(format!("{b:02x}"), style));
                    spans.push(Span::raw(" "));
                }
                None => spans.push(Span::raw(format!("{sep}   "))),
            }
        }
        spans.push(Span::raw(" "));
        for (i, b) in chunk.iter().enumerate() {
            let c = if b.is_ascii_graphic() || *b == b' ' {
                char::from(*b)
            } else {
                '.'
            };
            let style = if hl.contains(&(start + i)) {
                on
            } else {
                Style::new()
            };
            spans.push(Span::styled(c.to_string(), style));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn replay_pending(app: &App, frame: &mut Frame<'_>, area: Rect, title: &str) -> bool {
    let msg = match &app.replay {
        ReplayState::Done(_) => return false,
        ReplayState::Running { frames } => {
            format!("replaying the capture… {frames} frames so far")
        }
        ReplayState::Failed(e) => format!("replay failed: {e}"),
    };
    frame.render_widget(
        Paragraph::new(msg).block(focus_block(format!(" {title} "), true)),
        area,
    );
    true
}

/// Where the columns of what happened between two taps go in the flow table: after the type.
const BETWEEN_AT: usize = 5;

fn render_flows(app: &App, frame: &mut Frame<'_>, area: Rect) {
    if replay_pending(app, frame, area, "Flows") {
        return;
    }
    let Some(d) = app.replay_data() else { return };
    // only the rows on screen are made
    let h = layout::table_rows(area);
    let top = layout::table_top(app.flow_sel, h);
    let shown = d.replay.flows.get(top..).unwrap_or_default();
    let shown = &shown[..shown.len().min(h)];
    let keys: Vec<FlowKey> = shown.iter().map(|f| d.replay.key(f)).collect();
    // two taps: what happened between them, after the flow's type
    let between = app.taps.as_ref().and_then(Taps::between);
    let results = between.map(|b| between_of(b, &keys));
    let rows = shown.iter().enumerate().map(|(i, f)| {
        let id = top + i;
        let key = keys[i];
        let c = f.psn().counters();
        let bad = c.psn_gaps + c.out_of_order + c.retransmissions + f.rare().naks.total() > 0;
        let style = if bad {
            Style::new().fg(Color::Red)
        } else {
            Style::new()
        };
        let mut cells = vec![
            id.to_string(),
            key.src.to_string(),
            key.dst.to_string(),
            format!("{:#08x}", key.dest_qp),
            f.transport.map_or_else(
                || if f.has_cnp { "CNP".into() } else { "-".into() },
                |t| t.to_string(),
            ),
            f.frames.to_string(),
            f.bytes.to_string(),
            c.messages.to_string(),
            c.psn_gaps.to_string(),
            c.lost.to_string(),
            c.out_of_order.to_string(),
            c.duplicates.to_string(),
            c.retransmissions.to_string(),
            f.rare().naks.total().to_string(),
            f.rare().ecn_ce.to_string(),
            f.rare().cnps.to_string(),
            f.peer().map_or_else(|| "-".into(), |p| p.to_string()),
        ];
        if let Some(results) = &results {
            let b = results[i];
            let n = |v: fn(&FlowBetween) -> u64| b.map_or_else(|| "-".into(), |x| v(x).to_string());
            let up = b
                .and_then(|x| x.upstream)
                .map_or_else(|| "-".into(), |u| u.to_string());
            let extra = [
                up,
                n(|x| x.counts.matched),
                n(|x| x.counts.dropped),
                n(|x| x.counts.corrupted),
                n(|x| x.counts.appeared),
                n(|x| x.counts.reordered),
            ];
            cells.splice(BETWEEN_AT..BETWEEN_AT, extra);
        }
        Row::new(cells).style(style)
    });
    let mut header = vec![
        "#",
        "Source",
        "Destination",
        "QP",
        "Type",
        "Frames",
        "Bytes",
        "Msgs",
        "Gaps",
        "Lost",
        "OOO",
        "Dup",
        "Retx",
        "NAK",
        "CE",
        "CNP",
        "Peer",
    ];
    let mut widths = vec![
        Constraint::Length(3),
        Constraint::Length(15),
        Constraint::Length(15),
        Constraint::Length(8),
        Constraint::Length(4),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(4),
    ];
    if between.is_some() {
        header.splice(
            BETWEEN_AT..BETWEEN_AT,
            ["Up", "Match", "Drop", "Corr", "Appr", "Reord"],
        );
        widths.splice(
            BETWEEN_AT..BETWEEN_AT,
            [2, 7, 5, 5, 5, 5].map(Constraint::Length),
        );
    }
    let header = Row::new(header).style(Style::new().add_modifier(Modifier::BOLD));
    let title = format!(
        " Flows ({}) — Enter: show its frames · 4: its PSN chart ",
        d.replay.flows.len()
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(focus_block(title, true))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut st = TableState::default().with_selected(Some(app.flow_sel - top));
    frame.render_stateful_widget(table, area, &mut st);
}

/// What happened between the taps to the flows of `keys` (one search through them all).
fn between_of<'b>(b: &'b Between, keys: &[FlowKey]) -> Vec<Option<&'b FlowBetween>> {
    let at: FxHashMap<FlowKey, usize> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let mut found = vec![None; keys.len()];
    for f in &b.flows {
        if let Some(&i) = at.get(&f.key) {
            found[i] = Some(f);
        }
    }
    found
}

fn render_events(app: &App, frame: &mut Frame<'_>, area: Rect) {
    if replay_pending(app, frame, area, "Events") {
        return;
    }
    let Some(d) = app.replay_data() else { return };
    let t0 = d.replay.capture.first_time_ns.unwrap_or(0);
    // only the rows on screen are made: this tap's events, then those between the taps
    let h = layout::table_rows(area);
    let top = layout::table_top(app.event_sel, h);
    let events = d.replay.events.get(top..).unwrap_or_default();
    let events = &events[..events.len().min(h)];
    let rows = events.iter().map(|e| {
        let style =
            mark_color(super::app::mark(e.kind)).map_or(Style::new(), |c| Style::new().fg(c));
        let mut time = String::new();
        let _ = crate::units::rel_time(&mut time, i128::from(e.time_ns) - i128::from(t0));
        Row::new(vec![
            e.frame.to_string(),
            time,
            e.kind.name().to_owned(),
            e.flow.map_or_else(|| "-".into(), |f| f.to_string()),
            e.psn.map_or_else(|| "-".into(), |p| p.value().to_string()),
            e.detail.to_string(),
        ])
        .style(style)
    });
    // two taps: the events between them follow, with the frame in each tap
    let shown = app.taps.as_ref().map_or(0, |t| t.shown);
    let between = app.taps.as_ref().and_then(Taps::between);
    let between_rows = between.into_iter().flat_map(|b| {
        let from = top.saturating_sub(d.replay.events.len());
        let on_screen = b.events.get(from..).unwrap_or_default();
        let on_screen = &on_screen[..on_screen.len().min(h - events.len())];
        // the rows' flows as this tap's replay numbers them, looked up together
        let key = |e: &BetweenEvent| b.flows.get(e.flow as usize).map(|f| f.key);
        let keys: Vec<FlowKey> = on_screen.iter().filter_map(key).collect();
        let ids: FxHashMap<FlowKey, u32> = keys
            .iter()
            .zip(d.replay.find_each(&keys))
            .filter_map(|(&k, id)| Some((k, id?)))
            .collect();
        on_screen.iter().map(move |e| {
            let style =
                mark_color(super::app::mark(e.kind)).map_or(Style::new(), |c| Style::new().fg(c));
            let flow = key(e)
                .and_then(|k| ids.get(&k))
                .map_or_else(|| "-".into(), |id| id.to_string());
            let at = |tap: usize| e.frames[tap].map_or_else(|| "-".into(), |n| n.to_string());
            let upstream = app.between_target(e).map_or(String::new(), |(t, n)| {
                format!(" · Enter: frame {n} in tap {t}")
            });
            Row::new(vec![
                e.frames[shown].map_or_else(|| "-".into(), |n| n.to_string()),
                String::new(),
                e.kind.name().to_owned(),
                flow,
                e.psn.to_string(),
                format!("tap 0 frame {}, tap 1 frame {}{upstream}", at(0), at(1)),
            ])
            .style(style)
        })
    });
    let rows = rows.chain(between_rows);
    let header = Row::new(vec!["Frame", "Time", "Kind", "Flow", "PSN", "Detail"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(20),
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Min(20),
    ];
    let title = match between {
        Some(b) => format!(
            " Events ({} in this tap, {} between the taps) — Enter: jump to the frame ",
            d.replay.events.len(),
            b.events.len()
        ),
        None => format!(
            " Events ({}) — Enter: jump to the frame ",
            d.replay.events.len()
        ),
    };
    let table = Table::new(rows, widths)
        .header(header)
        .block(focus_block(title, true))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut st = TableState::default().with_selected(Some(app.event_sel - top));
    frame.render_stateful_widget(table, area, &mut st);
}

/// The filter bar: the text being typed (or the active filter), and an error at its column.
pub fn render_filter(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let label = match app.filter_kind {
        FilterKind::Display => "Filter: ",
        FilterKind::Search => "Search: ",
    };
    let mut lines = Vec::new();
    if app.mode == Mode::Filter {
        lines.push(Line::from(vec![
            Span::styled(
                label,
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            Span::raw(app.filter_input.clone()),
        ]));
        let x = area.x
            + u16::try_from(label.len() + app.filter_cursor)
                .unwrap_or(u16::MAX)
                .min(area.width.saturating_sub(1));
        frame.set_cursor_position((x, area.y));
    } else {
        let mut spans = Vec::new();
        if let Some(a) = &app.display {
            spans.push(Span::styled("Filter: ", Style::new().fg(Color::Cyan)));
            spans.push(Span::raw(format!(
                "{}  ({} frames{}) ",
                a.text,
                a.matches.len(),
                if a.done { "" } else { ", scanning…" }
            )));
        }
        if let Some(a) = &app.search {
            spans.push(Span::styled(" Search: ", Style::new().fg(Color::Cyan)));
            spans.push(Span::raw(format!(
                "{}  ({} matches{}; n/N) ",
                a.text,
                a.matches.len(),
                if a.done { "" } else { ", scanning…" }
            )));
        }
        if spans.is_empty() {
            spans.push(Span::styled(
                "f filter · / search · Tab pane · 1-5 views · ? help · q quit",
                Style::new().fg(Color::DarkGray),
            ));
        }
        lines.push(Line::from(spans));
    }
    if let Some(e) = &app.filter_error {
        let pad = label.len() + e.column.saturating_sub(1);
        lines.push(Line::styled(
            format!("{}^ column {}: {}", " ".repeat(pad), e.column, e.message),
            Style::new().fg(Color::Red),
        ));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// The status line: file, frame count, index and replay progress, messages.
pub fn render_status(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let mut s = format!(" {} · {} frames", app.name, app.index.len());
    match app.kernel_drops {
        Some(drops) => s.push_str(&format!(" · {drops} dropped by the kernel")),
        None if !app.index_done => s.push_str(" (indexing…)"),
        None => {}
    }
    match &app.replay {
        ReplayState::Running { frames } => s.push_str(&format!(" · replay: {frames} frames…")),
        ReplayState::Done(d) => {
            let r = &d.replay;
            s.push_str(&format!(
                " · {} flows · {} events",
                r.flows.len(),
                r.events.len()
            ));
            if let (Some(a), Some(b)) = (r.capture.first_time_ns, r.capture.last_time_ns) {
                s.push_str(&format!(" · {}", Dur(b.saturating_sub(a))));
            }
        }
        ReplayState::Failed(e) => s.push_str(&format!(" · replay failed: {e}")),
    }
    let mut spans = vec![Span::styled(
        s,
        Style::new().fg(Color::Black).bg(Color::Gray),
    )];
    if let Some(e) = &app.error {
        spans.push(Span::styled(
            format!(" error: {e}"),
            Style::new().fg(Color::White).bg(Color::Red),
        ));
    }
    if let Some(n) = &app.notice {
        spans.push(Span::styled(
            format!(" {n}"),
            Style::new().fg(Color::Yellow),
        ));
    }
    frame.render_widget(Line::from(spans), area);
}

const HELP: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "this help (any key closes it)"),
    (
        "1 2 3 4 5",
        "frames, flows, events, PSN chart, PFC timeline",
    ),
    ("Tab", "frames: list ↔ field tree; elsewhere: next view"),
    ("↑ ↓ j k", "move"),
    ("PgUp PgDn", "page"),
    (
        "g G Home End",
        "first / last (G, F: follow the newest frame)",
    ),
    ("Enter", "list: to the tree; tree: expand/collapse"),
    (
        "",
        "flows: show the flow's frames; events: jump to the frame",
    ),
    ("← → h l", "collapse / expand a tree group"),
    ("f", "display filter (the list shows matching frames)"),
    ("T", "--tap: the other tap's frames"),
    ("/", "search (n / N: next / previous match)"),
    ("Esc", "drop the filter and the search"),
    (
        "mouse",
        "click selects, wheel scrolls, click a tab to switch",
    ),
];

fn render_help(frame: &mut Frame<'_>, area: Rect) {
    let w = 76.min(area.width);
    let h = (u16::try_from(HELP.len()).unwrap_or(20) + 4).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let mut lines = vec![Line::raw("")];
    for (k, v) in HELP {
        lines.push(Line::from(vec![
            Span::styled(format!(" {k:<14}"), Style::new().fg(Color::Cyan)),
            Span::raw(*v),
        ]));
    }
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Help — rocescope inspect ")),
        r,
    );
}
