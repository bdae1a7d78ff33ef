//! The PSN-over-time chart of one flow and the PFC pause timeline per priority.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Row, Table};

use super::app::App;
use super::worker::{PsnClass, PsnPoint};
use crate::units::Duration as Dur;

/// Points drawn per class at most (the rest is sampled evenly).
const MAX_DRAWN: usize = 20_000;

/// 24-bit PSNs unwrapped into one increasing line (serial arithmetic from the previous one).
#[must_use]
pub fn unwrap_psns(points: &[PsnPoint]) -> Vec<i64> {
    let mut out = Vec::with_capacity(points.len());
    let mut prev: Option<(u32, i64)> = None;
    for p in points {
        let v = match prev {
            None => i64::from(p.psn),
            Some((raw, ext)) => {
                let d = p.psn.wrapping_sub(raw) & 0x00FF_FFFF;
                let d = if d >= 1 << 23 {
                    i64::from(d) - (1 << 24)
                } else {
                    i64::from(d)
                };
                ext + d
            }
        };
        prev = Some((p.psn, v));
        out.push(v);
    }
    out
}

fn class_style(c: PsnClass) -> (&'static str, Marker, Color) {
    match c {
        PsnClass::InOrder => ("in order", Marker::Braille, Color::Cyan),
        PsnClass::AfterGap => ("after a gap", Marker::Dot, Color::Red),
        PsnClass::OutOfOrder => ("out of order", Marker::Dot, Color::Yellow),
        PsnClass::Retransmission => ("retransmitted", Marker::Block, Color::Magenta),
        PsnClass::Duplicate => ("duplicate", Marker::Bar, Color::Gray),
    }
}

/// PSN over time of the selected flow.
pub fn render_psn(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let Some(d) = app.replay_data() else {
        frame.render_widget(
            Paragraph::new("waiting for the replay…").block(Block::bordered().title(" PSN chart ")),
            area,
        );
        return;
    };
    let Some(flow) = d.replay.flows.get(app.flow_sel) else {
        frame.render_widget(
            Paragraph::new("no flows").block(Block::bordered().title(" PSN chart ")),
            area,
        );
        return;
    };
    let points: &[PsnPoint] = d.psn.get(app.flow_sel).map_or(&[], Vec::as_slice);
    let c = &flow.psn.counters;
    let [head, chart_area] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3)]).areas(area);
    let head_text = vec![
        Line::from(vec![
            Span::styled(
                format!(
                    " Flow {}: {} → {} QP {:#08x}",
                    flow.id, flow.key.src, flow.key.dst, flow.key.dest_qp
                ),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                "   {} requests · gaps {} · lost {} · ooo {} · dup {} · retx {} · timeouts {}",
                points.len(),
                c.psn_gaps,
                c.lost,
                c.out_of_order,
                c.duplicates,
                c.retransmissions,
                c.implied_timeouts
            )),
        ]),
        Line::styled(
            " ↑/↓ other flow · Enter: its frames · x: requests in arrival order, y: PSN (unwrapped)",
            Style::new().fg(Color::DarkGray),
        ),
    ];
    frame.render_widget(Paragraph::new(head_text), head);
    if points.is_empty() {
        frame.render_widget(
            Paragraph::new("this flow has no sequenced requests")
                .block(Block::bordered().title(" PSN over time ")),
            chart_area,
        );
        return;
    }
    let ys = unwrap_psns(points);
    let classes = [
        PsnClass::InOrder,
        PsnClass::AfterGap,
        PsnClass::OutOfOrder,
        PsnClass::Retransmission,
        PsnClass::Duplicate,
    ];
    #[allow(clippy::cast_precision_loss)]
    let series: Vec<(PsnClass, Vec<(f64, f64)>)> = classes
        .iter()
        .map(|&cl| {
            let all: Vec<(f64, f64)> = points
                .iter()
                .zip(&ys)
                .enumerate()
                .filter(|(_, (p, _))| p.class == cl)
                .map(|(i, (_, y))| (i as f64, *y as f64))
                .collect();
            let step = all.len().div_ceil(MAX_DRAWN).max(1);
            (cl, all.into_iter().step_by(step).collect())
        })
        .collect();
    let (mut xmax, mut ymin, mut ymax) = (0f64, f64::MAX, f64::MIN);
    for (_, s) in &series {
        for &(x, y) in s {
            xmax = xmax.max(x);
            ymin = ymin.min(y);
            ymax = ymax.max(y);
        }
    }
    if ymin > ymax {
        (ymin, ymax) = (0.0, 1.0);
    }
    if (ymax - ymin) < 1.0 {
        ymax = ymin + 1.0;
    }
    if xmax <= 0.0 {
        xmax = 1.0;
    }
    let datasets: Vec<Dataset<'_>> = series
        .iter()
        .filter(|(_, s)| !s.is_empty())
        .map(|(cl, s)| {
            let (name, marker, color) = class_style(*cl);
            Dataset::default()
                .name(name)
                .marker(marker)
                .graph_type(GraphType::Scatter)
                .style(Style::new().fg(color))
                .data(s)
        })
        .collect();
    let fmt = |v: f64| format!("{v:.0}");
    let chart = Chart::new(datasets)
        .block(Block::bordered().title(" PSN over time "))
        .x_axis(
            Axis::default()
                .title("request #")
                .bounds([0.0, xmax])
                .labels(vec![fmt(0.0), fmt(xmax / 2.0), fmt(xmax)]),
        )
        .y_axis(
            Axis::default()
                .title("PSN")
                .bounds([ymin, ymax])
                .labels(vec![fmt(ymin), fmt((ymin + ymax) / 2.0), fmt(ymax)]),
        )
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)));
    frame.render_widget(chart, chart_area);
}

/// Which cells of a `width`-cell time line `[t0, t1]` a span covers.
fn span_cells(start: u64, end: u64, t0: u64, t1: u64, width: usize) -> (usize, usize) {
    let total = u128::from(t1.saturating_sub(t0).max(1));
    let w = width as u128;
    let at = |t: u64| {
        let rel = u128::from(t.clamp(t0, t1) - t0);
        usize::try_from(rel * w / total).unwrap_or(width)
    };
    let a = at(start).min(width.saturating_sub(1));
    let b = at(end).max(a + 1).min(width);
    (a, b)
}

/// Pause periods per priority over the capture's time, and the per-source counters.
pub fn render_pfc(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let Some(d) = app.replay_data() else {
        frame.render_widget(
            Paragraph::new("waiting for the replay…")
                .block(Block::bordered().title(" PFC timeline ")),
            area,
        );
        return;
    };
    let cap = &d.replay.capture;
    let (t0, t1) = (
        cap.first_time_ns.unwrap_or(0),
        cap.last_time_ns.unwrap_or(0),
    );
    let [top, bottom] = Layout::vertical([Constraint::Length(12), Constraint::Min(3)]).areas(area);
    let label_w = 6usize;
    let inner_w = usize::from(top.width.saturating_sub(2)).saturating_sub(label_w + 1);
    let mut lines = Vec::new();
    for p in 0..8u8 {
        let mut cells = vec![' '; inner_w];
        let mut paused = 0u64;
        for s in d.pauses.iter().filter(|s| s.priority == p) {
            paused += s.end_ns.saturating_sub(s.start_ns);
            if inner_w == 0 {
                continue;
            }
            let (a, b) = span_cells(s.start_ns, s.end_ns, t0, t1, inner_w);
            for c in &mut cells[a..b] {
                *c = '█';
            }
        }
        let bar: String = cells.into_iter().collect();
        let colour = if paused > 0 {
            Color::Red
        } else {
            Color::DarkGray
        };
        lines.push(Line::from(vec![
            Span::raw(format!(" p{p}   ")),
            Span::styled(bar.replace(' ', "·"), Style::new().fg(colour)),
        ]));
    }
    let mut storms = vec![' '; inner_w];
    for e in &d.replay.events {
        if e.kind == crate::replay::Kind::PfcStorm && inner_w > 0 {
            let (a, _) = span_cells(e.time_ns, e.time_ns, t0, t1, inner_w);
            storms[a] = '!';
        }
    }
    lines.push(Line::from(vec![
        Span::raw(" storm "),
        Span::styled(
            storms.into_iter().collect::<String>(),
            Style::new().fg(Color::Red),
        ),
    ]));
    let span = Dur(t1.saturating_sub(t0)).to_string();
    let pad = inner_w.saturating_sub(span.len() + 1);
    lines.push(Line::styled(
        format!("{:label_w$} 0{:>pad$}", "", span, pad = pad + span.len()),
        Style::new().fg(Color::DarkGray),
    ));
    let _ = pad;
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!(
            " PFC pauses per priority over the capture ({} pause spans) ",
            d.pauses.len()
        ))),
        top,
    );
    let rows = d.replay.pfc.iter().map(|r| {
        let m = r.src_mac;
        Row::new(vec![
            format!(
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                m[0], m[1], m[2], m[3], m[4], m[5]
            ),
            format!("p{}", r.priority),
            r.pause_frames.to_string(),
            r.resume_frames.to_string(),
            r.quanta_total.to_string(),
            Dur(r.paused_ns).to_string(),
            r.storms.to_string(),
        ])
    });
    let header = Row::new(vec![
        "Source", "Prio", "Pauses", "Resumes", "Quanta", "Paused", "Storms",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Length(18),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(12),
        Constraint::Length(7),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(" PFC per source and priority ")),
        bottom,
    );
}
