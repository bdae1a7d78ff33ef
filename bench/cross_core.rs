//! How long two threads take to hand one cache line back and forth (a round trip, in ns): what
//! `analyze`'s reading and engine threads pay, line by line, for every batch they share.
//!
//! On the virtual machines issue 13's figures come from it has two phases that come and go
//! over minutes: under 150 ns, and 300 to 500 ns. In the second, `analyze -f json` on
//! `bench/scale.sh`'s small2k took 0.46 s instead of 0.22 s (medians of 39 and 156 runs), while
//! one thread's speed did not change (the same replay pinned to one core, `taskset -c 0`, took
//! 0.40 s in both; a chain of multiplications the same time per step). So `bench/scale.sh`
//! prints it beside its figures, to tell which phase they ran in.
//!
//!   cargo run --profile dist --example cross_core   (the median of 9 rounds of 50,000, in ns)
//!
//! It needs two cores: on one, every hand-over would wait for the scheduler (hours in all), so
//! it says so and fails instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Round trips timed in a round.
const ROUND_TRIPS: u64 = 50_000;
/// Rounds timed, one after another with the same two threads; their median is printed.
const ROUNDS: u64 = 9;

fn main() {
    if std::thread::available_parallelism().map_or(true, |n| n.get() < 2) {
        eprintln!("cross_core: needs two cores");
        std::process::exit(2);
    }
    let line = Arc::new(AtomicU64::new(0));
    let theirs = Arc::clone(&line);
    // this thread writes an odd count, the other answers with the next even one
    let other = std::thread::spawn(move || {
        for i in 0..ROUNDS * ROUND_TRIPS {
            while theirs.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            theirs.store(2 * i + 2, Ordering::Release);
        }
    });
    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let start = Instant::now();
        for i in round * ROUND_TRIPS..(round + 1) * ROUND_TRIPS {
            line.store(2 * i + 1, Ordering::Release);
            while line.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        rounds.push(start.elapsed().as_secs_f64() * 1e9 / ROUND_TRIPS as f64);
    }
    if other.join().is_err() {
        eprintln!("cross_core: the second thread failed");
        std::process::exit(1);
    }
    rounds.sort_by(f64::total_cmp);
    let median = rounds.get(rounds.len() / 2).copied().unwrap_or(f64::NAN);
    println!("{median:.0}");
}
