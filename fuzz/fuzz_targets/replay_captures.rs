//! Capture files end to end (issue 15): any bytes (seeded with the demo and real captures, so
//! that libFuzzer mutates whole captures) read, replayed and reported as `rocescope analyze`
//! does, under `--icrc auto` and `--rto-min` 1 ms, then written as JSON, text and CSV.
//!
//! Invariants: no panic; the JSON report parses and counts the frames read; the text and CSV
//! reports are written; a capture error still leaves the frames before it replayed; read on a
//! second thread that prepares every frame (the frame driver's batches, `prepare` building in
//! their items), the replay reports the same, byte for byte.
#![no_main]

use std::io::Cursor;
use std::sync::OnceLock;

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use rocescope::analyze;
use rocescope::capture::CaptureReader;
use rocescope::cli::{Cli, Command};
use rocescope::config::{AnalyzeConfig, GlobalConfig};
use rocescope::replay;

fn config() -> &'static AnalyzeConfig {
    static CFG: OnceLock<AnalyzeConfig> = OnceLock::new();
    CFG.get_or_init(|| {
        let cli = Cli::parse_from(["rocescope", "analyze", "fuzz.pcap", "-f", "json"]);
        let global = GlobalConfig::try_from(&cli.global).expect("the global flags are valid");
        let Command::Analyze(args) = cli.cmd else {
            unreachable!("parsed as analyze")
        };
        AnalyzeConfig::try_from((&global, args)).expect("the flags are valid")
    })
}

fuzz_target!(|data: &[u8]| {
    let cfg = config();
    let Ok(mut reader) = CaptureReader::from_reader("fuzz.pcap", Cursor::new(data.to_vec())) else {
        return;
    };
    // One thread: the fuzzer's input is small, and one thread is deterministic.
    let replayed = replay::run_with(&mut reader, &cfg.engine(), Some(None), &mut ());
    let r = &replayed.replay;
    let mut out = Vec::new();
    analyze::json::write(cfg, r, &mut out).expect("a Vec takes everything");
    let json: serde_json::Value = match serde_json::from_slice(&out) {
        Ok(v) => v,
        Err(e) => panic!(
            "invalid JSON report ({e}): {}",
            String::from_utf8_lossy(&out)
        ),
    };
    assert_eq!(json["capture"]["frames"].as_u64(), Some(r.capture.frames));
    let mut reader = CaptureReader::from_reader("fuzz.pcap", Cursor::new(data.to_vec()))
        .expect("opened once already");
    let split = Some(Some(replay::Split::Reader));
    let threaded = replay::run_with(&mut reader, &cfg.engine(), split, &mut ());
    let mut threaded_out = Vec::new();
    analyze::json::write(cfg, &threaded.replay, &mut threaded_out).expect("a Vec takes everything");
    assert!(
        out == threaded_out,
        "the reading thread's replay differs:\n{}\n---\n{}",
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&threaded_out)
    );
    out.clear();
    analyze::text::write(cfg, r, &mut out, false).expect("a Vec takes everything");
    out.clear();
    analyze::csv::write(r, &mut out).expect("a Vec takes everything");
});
