//! Any text as a scenario file (issue 15), seeded with the real scenarios of
//! `generator/scenarios/` so that mutations stay close to valid ones: parsed and validated as
//! `rocescope generate` does, and when valid, generated (a bounded number of frames) with the
//! truth stated at the end.
//!
//! Invariants: no panic; every error names the file, a line of the text (1-based, at most one
//! past the last line) and a non-empty key, on one line; a valid scenario generates frames no
//! longer than `MAX_FRAME_LEN` into the buffer, and its truth serializes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope_generator::truth::between::between;
use rocescope_generator::{CapturePoint, Generator, MAX_FRAME_LEN, Scenario};

/// Frames generated at most per input.
const MAX_FRAMES: usize = 3_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let scenario = match Scenario::from_toml(text, "fuzz.toml") {
        Ok(s) => s,
        Err(e) => {
            let line = e.to_string();
            assert_eq!(e.origin, "fuzz.toml");
            assert!(line.starts_with("fuzz.toml:"), "{line}");
            assert!(!line.contains('\n'), "a multi-line error: {line:?}");
            assert!(
                e.line >= 1 && e.line <= text.lines().count() + 1,
                "line {} of {}: {line}",
                e.line,
                text.lines().count()
            );
            assert!(!e.key.is_empty(), "no key: {line}");
            return;
        }
    };
    // a scenario captured at both points: both taps, and the truth of what is between them
    let taps = if scenario.capture == CapturePoint::Both { 2 } else { 1 };
    let mut gens = Vec::new();
    for tap in 0..taps {
        let mut g = Generator::at_tap(&scenario, 1, tap);
        g.keep_tap_log();
        let mut buf = vec![0u8; MAX_FRAME_LEN];
        for _ in 0..MAX_FRAMES {
            match g.next_frame(&mut buf) {
                None => break,
                Some(Ok(out)) => assert!(out.len <= MAX_FRAME_LEN),
                Some(Err(_)) => break,
            }
        }
        let truth = g.truth();
        serde_json::to_string(&truth).expect("the truth serializes");
        gens.push(g);
    }
    if let [tx, rx] = gens.as_slice() {
        let between = between(tx.flow_keys(), &tx.peers(), tx.tap_log(), rx.tap_log());
        serde_json::to_string(&between).expect("the truth serializes");
    }
});
