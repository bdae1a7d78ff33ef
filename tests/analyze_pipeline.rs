//! The two-thread replay (`rocescope::analyze::pipeline`) reports exactly what the
//! single-threaded one does, however the frames are split between the threads: every capture
//! of `captures/` and `../shared/captures/real/`, alone and merged. The JSON report written
//! directly is also checked against serde_json's layout of it on each.

use std::path::PathBuf;

use rocescope::analyze::{AnalyzeConfig, replay_with, write_report};
use rocescope::config::AnalyzeFormat;
use rocescope::replay::{Engine, EngineConfig, PacketEvent, Replay, Split};
use rocescope_dissectors::Opcode;

mod common;

fn report(cfg: &AnalyzeConfig, split: Option<Split>) -> String {
    written(cfg, &replay_with(cfg, split).unwrap())
}

fn written(cfg: &AnalyzeConfig, replay: &Replay) -> String {
    let mut out = Vec::new();
    write_report(cfg, replay, &mut out, false).unwrap();
    String::from_utf8(out).unwrap()
}

/// The report of the replay on one thread a batch at a time (`analyze --tap`'s replays).
fn batched(cfg: &AnalyzeConfig) -> String {
    let mut source = rocescope::capture::open_all(&cfg.captures).unwrap();
    let replayed = rocescope::replay::run_batched(&mut source, &cfg.engine(), &mut ());
    assert!(replayed.error.is_none(), "{:?}", replayed.error);
    written(cfg, &replayed.replay)
}

#[test]
fn every_split_reports_the_same() {
    let files = common::demo_and_real_captures();
    let mut sets: Vec<Vec<PathBuf>> = files.iter().map(|f| vec![f.clone()]).collect();
    sets.push(files[..files.len().min(4)].to_vec());
    for set in sets {
        let mut cfg = AnalyzeConfig::new(set.clone());
        cfg.format = AnalyzeFormat::Json;
        let want = report(&cfg, None);
        // the JSON writer against serde_json's pretty printer of the same report, byte for byte
        let replay = replay_with(&cfg, None).unwrap();
        let checked = common::json_report(&cfg, &replay, &format!("{set:?}"));
        assert_eq!(want.as_bytes(), checked, "{set:?}: the command's report");
        for split in [Split::Reader, Split::Engine, Split::Balanced] {
            assert_eq!(report(&cfg, Some(split)), want, "{set:?} split {split:?}");
        }
        assert_eq!(batched(&cfg), want, "{set:?} batched");
    }
}

#[test]
fn unreadable_capture_is_an_error() {
    let cfg = AnalyzeConfig::new(vec![PathBuf::from("/nonexistent/x.pcap")]);
    assert!(replay_with(&cfg, Some(Split::Balanced)).is_err());
}

/// A report of thousands of flows is formatted on several threads, a chunk of flows each at a
/// time: byte for byte what serde_json writes of it, in order.
#[test]
fn thousands_of_flows_written_as_serde_writes_them() {
    let mut engine = Engine::new(EngineConfig::default());
    let mut frame = 0;
    for qp in 0..3000u32 {
        // a different number of packets per flow, and a gap now and then
        for k in 0..1 + qp % 4 {
            frame += 1;
            let psn = if qp % 7 == 0 { 2 * k } else { k };
            engine.packet(&PacketEvent::new(
                frame,
                Opcode::RC_RDMA_WRITE_ONLY,
                0x100 + qp,
                psn,
            ));
        }
    }
    let replay = engine.finish();
    assert_eq!(replay.flows.len(), 3000);
    let mut cfg = AnalyzeConfig::new(vec![PathBuf::from("many.pcap")]);
    cfg.format = AnalyzeFormat::Json;
    common::json_report(&cfg, &replay, "3,000 flows");
}

/// Thousands of connections with losses, more flows than the engine leaves in cache: their
/// packets are shown to the engine ahead of their turn (`Engine::ahead`), which must change
/// nothing the replay decides.
#[test]
fn flows_fetched_ahead_report_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    // 10,000 flows: more than those below which nothing is fetched ahead
    let pcap = common::many_connections(tmp.path(), 5000, 2, 3, 0.002);
    let mut cfg = AnalyzeConfig::new(vec![pcap]);
    cfg.format = AnalyzeFormat::Json;
    let replay = replay_with(&cfg, None).unwrap();
    assert_eq!(replay.flows.len(), 10_000);
    assert!(replay.flows.len() > rocescope::replay::engine::AHEAD_FLOWS);
    let lost: u64 = replay.flows.iter().map(|f| f.psn().counters().lost).sum();
    assert!(lost > 0, "the drops made no losses to find");
    let want = report(&cfg, None);
    // the reading thread dissects every frame: every packet is shown ahead
    assert_eq!(report(&cfg, Some(Split::Reader)), want);
    assert_eq!(report(&cfg, Some(Split::Balanced)), want);
    // one thread, a batch dissected before it is stepped: every packet shown ahead as well
    assert_eq!(batched(&cfg), want);
}
