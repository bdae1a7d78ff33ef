//! `rocescope inspect` without a terminal: the `App` driven through `Action`s, and whole
//! screens rendered at 120×40 with `TestBackend` (style.md §2.8).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rocescope::replay::Kind;
use rocescope::tui::InspectConfig;
use rocescope::tui::app::{Action, App, FilterKind, Focus, Mode, View};
use rocescope::tui::ui;

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name)
}

fn open(name: &str) -> App {
    let mut app = App::open(&InspectConfig::new(capture(name)));
    app.wait_idle(Duration::from_secs(60));
    assert!(app.idle(), "workers did not finish");
    app
}

/// The two-tap demo (`inspect --tap two_taps.tx.pcap --tap two_taps.rx.pcap`), its workers done.
fn open_two_taps() -> App {
    let tx = capture("two_taps.tx.pcap");
    let rx = capture("two_taps.rx.pcap");
    let mut cfg = InspectConfig::new(tx.clone());
    cfg.taps = vec![tx, rx];
    let mut app = App::open(&cfg);
    settle(&mut app);
    assert!(app.idle(), "workers did not finish");
    app
}

fn settle(app: &mut App) {
    app.wait_idle(Duration::from_secs(60));
}

fn screen(app: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| ui::render(app, f)).unwrap();
    format!("{}", t.backend())
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.apply(Action::FilterChar(c));
    }
}

#[test]
fn navigation_without_a_terminal() {
    let mut app = open("loss_gbn.pcap");
    let n = app.index.len();
    assert!(n > 10);
    assert_eq!(app.sel, 0);
    assert_eq!(app.detail.as_ref().map(|d| d.number), Some(1));
    app.apply(Action::Down);
    app.apply(Action::Down);
    assert_eq!(app.detail.as_ref().map(|d| d.number), Some(3));
    app.apply(Action::Bottom);
    assert_eq!(app.sel, n - 1);
    assert_eq!(app.detail.as_ref().map(|d| d.number), Some(n as u64));
    app.apply(Action::Top);
    assert_eq!(app.sel, 0);
    app.apply(Action::PageDown);
    assert!(app.sel > 5);
    assert!(app.top <= app.sel && app.sel < app.top + app.list_height());
    app.apply(Action::PageUp);
    assert_eq!(app.sel, 0);
    app.apply(Action::Help);
    assert_eq!(app.mode, Mode::Help);
    app.apply(Action::CloseHelp);
    app.apply(Action::Quit);
    assert!(app.should_quit);
}

#[test]
fn tree_expand_collapse_and_highlight() {
    let mut app = open("read_heavy.pcap");
    app.apply(Action::Enter);
    assert_eq!(app.focus, Focus::Tree);
    let before = app.visible_tree().len();
    // The first line is the frame group: collapsing hides everything under it.
    app.apply(Action::Collapse);
    assert!(app.visible_tree().len() < before);
    app.apply(Action::Enter);
    assert_eq!(app.visible_tree().len(), before);
    let d = app.detail.as_ref().unwrap();
    let reth = app
        .visible_tree()
        .iter()
        .position(|&i| {
            d.nodes[i]
                .text
                .starts_with("RDMA Extended Transport Header")
                || d.nodes[i].path.ends_with("/reth")
        })
        .expect("a RETH group");
    for _ in 0..reth {
        app.apply(Action::Down);
    }
    let hl = app.highlight().unwrap();
    assert_eq!(hl.len(), 16, "RETH is 16 bytes");
}

#[test]
fn filters_and_search() {
    let mut app = open("loss_gbn.pcap");
    let all = app.index.len();
    app.apply(Action::OpenFilter(FilterKind::Display));
    typed(&mut app, "qp == 0x601");
    app.apply(Action::FilterSubmit);
    settle(&mut app);
    assert_eq!(app.mode, Mode::Normal);
    let rows = app.row_count();
    assert!(rows > 0 && rows < all, "{rows} of {all}");
    app.apply(Action::ClearFilter);
    assert_eq!(app.row_count(), all);

    app.apply(Action::OpenFilter(FilterKind::Search));
    typed(&mut app, "retrans");
    app.apply(Action::FilterSubmit);
    // Analysis marks are not display-filter fields yet: the error names its column.
    if app.filter_error.is_some() {
        app.apply(Action::FilterCancel);
        app.apply(Action::OpenFilter(FilterKind::Search));
        for _ in 0..10 {
            app.apply(Action::FilterBackspace);
        }
        typed(&mut app, "aeth");
        app.apply(Action::FilterSubmit);
    }
    settle(&mut app);
    let matches = app.search.as_ref().unwrap().matches.clone();
    assert!(!matches.is_empty());
    app.apply(Action::NextMatch);
    assert_eq!(app.detail.as_ref().unwrap().number, matches[0]);
    app.apply(Action::NextMatch);
    if matches.len() > 1 {
        assert_eq!(app.detail.as_ref().unwrap().number, matches[1]);
        app.apply(Action::PrevMatch);
        assert_eq!(app.detail.as_ref().unwrap().number, matches[0]);
    }
}

#[test]
fn flows_and_events_jump() {
    let mut app = open("loss_gbn.pcap");
    app.apply(Action::Show(View::Events));
    let ev = app.replay_data().unwrap().replay.events.clone();
    assert!(!ev.is_empty());
    app.apply(Action::Down);
    app.apply(Action::Enter);
    assert_eq!(app.view, View::Frames);
    assert_eq!(app.detail.as_ref().unwrap().number, ev[1].frame);

    app.apply(Action::Show(View::Flows));
    app.apply(Action::Enter);
    settle(&mut app);
    assert_eq!(app.view, View::Frames);
    assert!(app.display.is_some());
    assert!(app.row_count() > 0);
}

#[test]
fn corrupt_capture_is_an_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.pcap");
    let mut bytes = std::fs::read(capture("loss_gbn.pcap")).unwrap();
    bytes.truncate(300);
    bytes.extend_from_slice(&[0xff; 40]);
    std::fs::write(&p, bytes).unwrap();
    let mut app = App::open(&InspectConfig::new(&p));
    app.wait_idle(Duration::from_secs(30));
    assert!(app.error.is_some());
    let s = screen(&app);
    assert!(s.contains("error"), "{s}");
    let mut app = App::open(&InspectConfig::new(dir.path().join("missing.pcap")));
    app.wait_idle(Duration::from_secs(30));
    app.apply(Action::Bottom);
    app.apply(Action::Enter);
    assert!(screen(&app).contains("error"));
}

#[test]
fn mouse_selects_and_scrolls() {
    let mut app = open("loss_gbn.pcap");
    // Row 0 is the tab line, the list border is row 1, the header row 2, frames from row 3.
    app.apply(Action::Click { column: 5, row: 5 });
    assert_eq!(app.sel, 2);
    app.apply(Action::ScrollDown { column: 5, row: 5 });
    assert_eq!(app.sel, 5);
    app.apply(Action::Click { column: 25, row: 0 });
    assert_eq!(app.view, View::Events);
}

#[test]
fn snapshot_frame_list() {
    let mut app = open("loss_gbn.pcap");
    // To the first event, so that marked frames are on screen.
    app.apply(Action::Show(View::Events));
    app.apply(Action::Enter);
    assert_snapshot!("frame_list_loss_gbn", screen(&app));
}

#[test]
fn snapshot_reth_tree_and_hex() {
    let mut app = open("read_heavy.pcap");
    app.apply(Action::Enter);
    let d = app.detail.as_ref().unwrap();
    let reth = app
        .visible_tree()
        .iter()
        .position(|&i| d.nodes[i].path.ends_with("/reth"))
        .unwrap();
    for _ in 0..reth {
        app.apply(Action::Down);
    }
    assert_snapshot!("reth_tree_hex", screen(&app));
}

#[test]
fn snapshot_flow_table() {
    let mut app = open("loss_gbn.pcap");
    app.apply(Action::Show(View::Flows));
    assert_snapshot!("flow_table_loss_gbn", screen(&app));
}

#[test]
fn snapshot_psn_chart() {
    let mut app = open("loss_gbn.pcap");
    let flows = &app.replay_data().unwrap().replay.flows;
    let gbn = flows
        .iter()
        .position(|f| f.psn().counters().retransmissions > 0)
        .expect("a flow with go-back-N");
    app.apply(Action::Show(View::Psn));
    for _ in 0..gbn {
        app.apply(Action::Down);
    }
    assert_snapshot!("psn_chart_gbn", screen(&app));
}

/// The PSNs a capture point missed (acknowledged by the responder) are their own series,
/// apart from the gaps and go-backs of network loss.
#[test]
fn snapshot_psn_chart_capture_drops() {
    let mut app = open("capture_drop.pcap");
    let flows = &app.replay_data().unwrap().replay.flows;
    let f = flows
        .iter()
        .position(|f| f.psn().counters().not_captured > 0)
        .expect("a flow with capture drops");
    assert_eq!(flows[f].psn().counters().lost, 0);
    app.apply(Action::Show(View::Psn));
    for _ in 0..f {
        app.apply(Action::Down);
    }
    let text = screen(&app);
    assert!(text.contains("not captured (ACKed)"), "{text}");
    assert!(text.contains("not captured 14"), "{text}");
    assert_snapshot!("psn_chart_capture_drops", text);
}

#[test]
fn snapshot_pfc_timeline() {
    let mut app = open("pfc_storm.pcap");
    app.apply(Action::Show(View::Pfc));
    assert_snapshot!("pfc_timeline", screen(&app));
}

#[test]
fn snapshot_filter_error() {
    let mut app = open("loss_gbn.pcap");
    app.apply(Action::OpenFilter(FilterKind::Display));
    typed(&mut app, "qp == 0x601 && psn >< 3");
    app.apply(Action::FilterSubmit);
    assert_eq!(app.mode, Mode::Filter);
    let e = app.filter_error.clone().unwrap();
    assert!(e.column > 10, "{e}");
    assert_snapshot!("filter_error", screen(&app));
}

#[test]
fn snapshot_help() {
    let mut app = open("clean_write.pcap");
    app.apply(Action::Help);
    assert_snapshot!("help", screen(&app));
}

/// `inspect --tap A --tap B`: the flow table gains what happened between the taps, the events
/// between them follow the tap's own, and Enter on a packet dropped between them shows it in
/// the tap upstream (switching to it when it is the other one); `T` switches back.
#[test]
fn two_taps_show_what_is_between_them_and_go_upstream() {
    let mut app = open_two_taps();
    assert!(app.name.contains("two_taps.tx.pcap") && app.name.contains("tap 0 of 2"));
    let b = app
        .taps
        .as_ref()
        .and_then(|t| t.between())
        .expect("the taps matched")
        .clone();

    app.apply(Action::Show(View::Flows));
    let s = screen(&app);
    for col in ["Up", "Match", "Drop", "Corr", "Appr", "Reord"] {
        assert!(s.contains(col), "no {col} column:\n{s}");
    }

    // the ACK dropped between the taps: upstream is the receiver side's tap (1)
    app.apply(Action::Show(View::Events));
    let own = app.replay_data().unwrap().replay.events.len();
    let (i, ack) = b
        .events
        .iter()
        .enumerate()
        .find(|(_, e)| e.kind == Kind::DroppedBetween && e.frames[0].is_none())
        .expect("a dropped ACK");
    let in_rx = ack.frames[1].expect("seen upstream");
    let s = screen(&app);
    assert!(s.contains("between the taps"), "{s}");
    app.event_sel = own + i;
    app.apply(Action::Enter);
    settle(&mut app);
    let taps = app.taps.as_ref().unwrap();
    assert_eq!(taps.shown, 1);
    assert!(
        taps.between().is_some(),
        "what is known of both taps is kept"
    );
    assert!(app.name.contains("two_taps.rx.pcap"), "{}", app.name);
    assert_eq!(app.view, View::Frames);
    assert_eq!(app.detail.as_ref().map(|d| d.number), Some(in_rx));

    // T: back to the sender side's tap, where a WRITE dropped between the taps is
    app.apply(Action::SwitchTap);
    settle(&mut app);
    assert_eq!(app.taps.as_ref().unwrap().shown, 0);
    let (j, write) = b
        .events
        .iter()
        .enumerate()
        .find(|(_, e)| e.kind == Kind::DroppedBetween && e.frames[1].is_none())
        .expect("a dropped WRITE");
    app.apply(Action::Show(View::Events));
    app.event_sel = app.replay_data().unwrap().replay.events.len() + j;
    app.apply(Action::Enter);
    settle(&mut app);
    assert_eq!(
        app.taps.as_ref().unwrap().shown,
        0,
        "already upstream: no switch"
    );
    assert_eq!(app.detail.as_ref().map(|d| d.number), write.frames[0]);

    // one capture: T says how to open two
    let mut one = open("loss_gbn.pcap");
    one.apply(Action::SwitchTap);
    assert!(one.notice.as_deref().is_some_and(|n| n.contains("--tap")));
}

/// The data rows of a table screen (flows, events): the lines between the header and the
/// bottom border, split at spaces, the border taken off.
fn table_rows(screen: &str) -> Vec<Vec<String>> {
    screen
        .lines()
        .skip(3) // the tab line, the border, the header
        .take_while(|l| !l.contains('└'))
        .map(|l| {
            l.trim_matches(|c| c == '"' || c == '│' || c == ' ')
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|cells| !cells.is_empty())
        .collect()
}

/// Only the rows on screen are made (a fabric's capture has hundreds of thousands of flows):
/// scrolled to the end, the table shows the flows before the last, in order, with the last
/// one on its bottom row; a click on a row selects the flow it shows.
#[test]
fn tables_scroll_to_the_selection_and_clicks_select_what_they_show() {
    let dir = tempfile::tempdir().unwrap();
    let cap = common::many_connections(dir.path(), 60, 1, 2, 0.0);
    let mut app = App::open(&InspectConfig::new(&cap));
    settle(&mut app);
    let flows = app.replay_data().unwrap().replay.flows.len();
    assert_eq!(flows, 120);
    app.apply(Action::Show(View::Flows));
    let ids = |app: &App| -> Vec<usize> {
        table_rows(&screen(app))
            .iter()
            .map(|r| r[0].parse().unwrap())
            .collect()
    };
    let first_screen = ids(&app);
    assert_eq!(first_screen[0], 0);
    let h = first_screen.len();
    assert!((30..flows).contains(&h), "{h} rows on screen");
    app.apply(Action::Bottom);
    let shown = ids(&app);
    assert_eq!(shown, (flows - h..flows).collect::<Vec<_>>());
    // the tab line, the border and the header are rows 0-2: the fourth data row is row 6
    app.apply(Action::Click { column: 2, row: 6 });
    assert_eq!(app.flow_sel, shown[3]);
    app.apply(Action::PageUp);
    let sel = app.flow_sel;
    assert_eq!(
        ids(&app).last(),
        Some(&sel),
        "the selection on the last row"
    );

    // events (loss_gbn has more than a screen of them): the last one at the bottom
    let mut app = open("loss_gbn.pcap");
    let events = app.replay_data().unwrap().replay.events.clone();
    assert!(events.len() > h, "{} events", events.len());
    app.apply(Action::Show(View::Events));
    app.apply(Action::Bottom);
    let frames: Vec<u64> = table_rows(&screen(&app))
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    let expected: Vec<u64> = events[events.len() - h..].iter().map(|e| e.frame).collect();
    assert_eq!(frames, expected);
    app.apply(Action::Click { column: 2, row: 3 });
    assert_eq!(app.event_sel, events.len() - h);
}

/// Two taps: each flow row shows what happened to that flow between the taps, and each
/// event between them names its flow by the shown tap's flow id (looked up here one by one).
#[test]
fn two_tap_rows_show_their_own_flows_results() {
    let mut app = open_two_taps();
    let b = app.taps.as_ref().and_then(|t| t.between()).unwrap().clone();
    let replay = &app.replay_data().unwrap().replay;
    let keys: Vec<_> = replay.flows.iter().map(|f| replay.key(f)).collect();
    app.apply(Action::Show(View::Flows));
    let rows = table_rows(&screen(&app));
    assert_eq!(rows.len(), keys.len());
    for r in &rows {
        let id: usize = r[0].parse().unwrap();
        let key = keys[id];
        let between = b.flows.iter().find(|f| f.key == key);
        // #, source, destination, QP, type, then Up and Match
        let matched = between.map_or("-".to_owned(), |f| f.counts.matched.to_string());
        assert_eq!(r[6], matched, "flow {id}: {r:?}");
    }
    app.apply(Action::Show(View::Events));
    app.apply(Action::Bottom);
    let rows = table_rows(&screen(&app));
    let last = b.events.last().unwrap();
    let key = b.flows[last.flow as usize].key;
    let id = keys
        .iter()
        .position(|&k| k == key)
        .map_or("-".to_owned(), |i| i.to_string());
    // frame, kind, flow (a row between the taps has no time)
    let row = rows.last().unwrap();
    assert_eq!(row[1], last.kind.name(), "{row:?}");
    assert_eq!(row[2], id, "{row:?}");
    let with_flow = rows.iter().filter(|r| r[2] != "-").count();
    assert!(with_flow > 1, "{rows:?}");
}
