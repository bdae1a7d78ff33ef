//! Instruction counting for `bench/dissect-instructions.sh`: dissect one frame `N` times
//! (`ack`, `write` (1 KiB RC WRITE FIRST), or `erspan` (the same WRITE through ERSPAN III)),
//! optionally verifying the ICRC. Run under callgrind twice with different `N`: the
//! difference over the difference of `N` is the per-frame cost, free of start-up.
//!
//! `cargo run --release -p rocescope-dissectors --example dissect_count -- write 1000 icrc`

use std::hint::black_box;

use rocescope_dissectors::stack;

#[path = "../benches/frames/mod.rs"]
mod frames;

fn get(kind: &str) -> Vec<u8> {
    match kind {
        "ack" => frames::ack(),
        "write" => frames::write_1k(),
        "erspan" => frames::erspan3(&frames::write_1k()),
        _ => panic!("kind: ack, write or erspan"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: dissect_count ack|write|erspan N [icrc]");
        std::process::exit(2);
    };
    let frame = get(kind);
    let icrc = args.get(3).is_some_and(|a| a == "icrc");
    let mut acc = 0u64;
    for _ in 0..n {
        let d = stack::dissect(black_box(&frame)).expect("a valid frame");
        acc += if icrc {
            u64::from(d.icrc_status() == rocescope_dissectors::icrc::IcrcStatus::Valid)
        } else {
            d.roce.map_or(0, |r| u64::from(r.bth.psn().value()))
        };
    }
    println!("{acc}");
}
