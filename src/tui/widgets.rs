//! The PSN-over-time chart of one flow and the PFC pause timeline per priority.

// Indexing cannot panic here: chart cells and points are indexed by positions clamped to the
// widget's area and the series' length.
#![allow(clippy::indexing_slicing)]

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Row, Table};

use super::app::App;
use super::worker::{MissedRange, PsnClass, PsnPoint};
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
            None => i64::from(p.psn()),
            Some((raw, ext)) => {
                let d = p.psn().wrapping_sub(raw) & 0x00FF_FFFF;
                let d = if d >= 1 << 23 {
                    i64::from(d) - (1 << 24)
                } else {
                    i64::from(d)
                };
                ext + d
            }
        };
        prev = Some((p.psn(), v));
        out.push(v);
    }
    out
}

/// Chart points for the PSNs the capture missed: each range drawn where it was settled
/// (x: the next captured request at or after that frame), its PSNs unwrapped against the
/// nearest captured request's. At most `max` points.
#[must_use]
pub fn missed_points(
    points: &[PsnPoint],
    ys: &[i64],
    missed: &[MissedRange],
    max: usize,
) -> Vec<(f64, f64)> {
    let total: u64 = missed.iter().map(|m| u64::from(m.n)).sum();
    let step = usize::try_from(total.div_ceil(max.max(1) as u64).max(1)).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut k = 0usize;
    for m in missed {
        if points.is_empty() {
            break;
        }
        let at = points
            .partition_point(|p| p.frame() < m.frame)
            .min(points.len() - 1);
        let (near, near_y) = (points[at].psn(), ys[at]);
        for i in 0..m.n {
            if k.is_multiple_of(step) {
                let psn = m.first.wrapping_add(i) & 0x00FF_FFFF;
                let d = psn.wrapping_sub(near) & 0x00FF_FFFF;
                let d = if d >= 1 << 23 {
                    i64::from(d) - (1 << 24)
                } else {
                    i64::from(d)
                };
                #[allow(clippy::cast_precision_loss)]
                out.push((at as f64, (near_y + d) as f64));
            }
            k += 1;
        }
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
    let points: &[PsnPoint] = d.psn.flow(app.flow_sel);
    let c = flow.psn().counters();
    let [head, chart_area] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3)]).areas(area);
    let head_text = vec![
        Line::from(vec![
            Span::styled(
                format!(" Flow {}: {}", app.flow_sel, d.replay.key(flow)),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                "   {} requests · gaps {} · lost {}{} · ooo {} · dup {} · retx {} · timeouts {}",
                points.len(),
                c.psn_gaps,
                c.lost,
                if c.not_captured > 0 {
                    format!(" · not captured {}", c.not_captured)
                } else {
                    String::new()
                },
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
    let classes = PsnClass::ALL;
    #[allow(clippy::cast_precision_loss)]
    let series: Vec<(PsnClass, Vec<(f64, f64)>)> = classes
        .iter()
        .map(|&cl| {
            let all: Vec<(f64, f64)> = points
                .iter()
                .zip(&ys)
                .enumerate()
                .filter(|(_, (p, _))| p.class() == cl)
                .map(|(i, (_, y))| (i as f64, *y as f64))
                .collect();
            let step = all.len().div_ceil(MAX_DRAWN).max(1);
            (cl, all.into_iter().step_by(step).collect())
        })
        .collect();
    // PSNs the responder acknowledged that the capture missed: drawn apart from losses
    let missed_list: &[MissedRange] = d.missed.get(app.flow_sel).map_or(&[], Vec::as_slice);
    let missed = missed_points(points, &ys, missed_list, MAX_DRAWN);
    let (mut xmax, mut ymin, mut ymax) = (0f64, f64::MAX, f64::MIN);
    for s in series
        .iter()
        .map(|(_, s)| s)
        .chain(std::iter::once(&missed))
    {
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
    let mut datasets: Vec<Dataset<'_>> = series
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
    if !missed.is_empty() {
        datasets.push(
            Dataset::default()
                .name("not captured (ACKed)")
                .marker(Marker::Dot)
                .graph_type(GraphType::Scatter)
                .style(Style::new().fg(Color::Blue))
                .data(&missed),
        );
    }
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

#[cfg(test)]
mod test {
    use super::*;

    fn point(frame: u64, psn: u32) -> PsnPoint {
        PsnPoint::new(0, frame, psn, PsnClass::InOrder).unwrap()
    }

    #[test]
    fn missed_psns_sit_beside_the_captured_ones() {
        // request PSNs 2^24-2, 2^24-1, (0 and 1 missed), 2, 3: across the wrap
        let max = 0x00FF_FFFF;
        let points = [point(1, max - 1), point(2, max), point(6, 2), point(7, 3)];
        let ys = unwrap_psns(&points);
        assert_eq!(
            ys,
            [
                i64::from(max) - 1,
                i64::from(max),
                i64::from(max) + 3,
                i64::from(max) + 4
            ]
        );
        // PSNs 0 and 1 settled by an ACK at frame 5: drawn at the next request (x = 2),
        // unwrapped past the wrap like it
        let missed = [MissedRange {
            frame: 5,
            first: 0,
            n: 2,
        }];
        let got = missed_points(&points, &ys, &missed, 100);
        let y = |v: i64| v as f64;
        assert_eq!(
            got,
            [(2.0, y(i64::from(max) + 1)), (2.0, y(i64::from(max) + 2))]
        );
        // sampled down to at most `max` points
        let many = [MissedRange {
            frame: 9,
            first: 4,
            n: 1000,
        }];
        let got = missed_points(&points, &ys, &many, 10);
        assert_eq!(got.len(), 10);
        assert_eq!(got[0], (3.0, y(i64::from(max) + 5)));
    }
}
