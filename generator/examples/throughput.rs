//! Generation speed: `cargo run --release -p rocescope-generator --example throughput`.
//! Bulk RC WRITE with 1 KiB payloads (≈1.1 KB frames) into a reused buffer, no sink.

use std::time::Instant;

use rocescope_generator::{Generator, MAX_FRAME_LEN, Scenario};

const SCENARIO: &str = r#"
[link]
speed_gbps = 400
stop_ns = 3600000000000
max_frames = 100000000
[[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
[[connection]]
name = "c"
transport = "rc"
requester = "a"
responder = "b"
requester_qpn = 17
responder_qpn = 18
pmtu = 1024

[[traffic]]
connection = "c"
op = "write"
size = 1048576
messages = 5000
"#;

fn main() {
    let sc = Scenario::from_toml(SCENARIO, "throughput").expect("valid scenario");
    let mut g = Generator::new(&sc, 1);
    let mut buf = vec![0u8; MAX_FRAME_LEN];
    let start = Instant::now();
    let (mut frames, mut bytes) = (0u64, 0u64);
    while let Some(r) = g.next_frame(&mut buf) {
        let f = r.expect("frame");
        frames += 1;
        bytes += f.len as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let (fps, gbps) = (frames as f64 / secs, bytes as f64 * 8.0 / secs / 1e9);
    println!("{frames} frames, {bytes} bytes in {secs:.3} s: {fps:.0} frames/s, {gbps:.1} Gbit/s");
}
