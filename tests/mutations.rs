//! Black-box mutation of captures through the built binary (issue 15), bounded to about a
//! minute: a few thousand mutants of the demo captures and of the real ones in
//! `../shared/captures/real/` (read in place, never copied into the repository), each through
//! `dissect -f jsonl`, `analyze -f json` and `dissect -Y FILTER`. Mutations: bit flips, extreme
//! bytes and words, record lengths set to extremes or nudged, truncation, splicing two files,
//! duplicated and deleted runs.
//!
//! Every run must exit 0 or 2 with at most one line on stderr and no panic. A failure prints
//! the mutant's seed; `MUTATION_SEED=N cargo test --test mutations` reruns that one mutant.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Mutants to try, and the time after which the test stops early.
const MUTANTS: usize = 3_000;
const BUDGET: Duration = Duration::from_secs(50);
/// Fewer than this many mutants in the budget means the test did not do its job.
const MIN_MUTANTS: usize = 300;
/// Bytes of each capture kept as a base: small inputs, many runs.
const BASE_LEN: usize = 24 << 10;

const FILTER: &str = "roce && bth.psn > 5 || pfc || infiniband.lrh.dlid == 2 || erspan";

/// splitmix64: a small, well-mixed, seedable generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
}

fn bases() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("captures")];
    let real = root.join("../shared/captures/real");
    if real.is_dir() {
        dirs.push(real);
    }
    let mut out = Vec::new();
    for dir in dirs {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"))
            .collect();
        names.sort();
        for p in names {
            let mut bytes = std::fs::read(&p).unwrap();
            bytes.truncate(BASE_LEN);
            out.push((p.file_name().unwrap().to_string_lossy().into_owned(), bytes));
        }
    }
    out
}

/// Offsets of the classic-pcap record headers in `b` (little-endian or big-endian).
fn records(b: &[u8]) -> Vec<(usize, bool)> {
    let big = match b.get(0..4) {
        Some([0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]) => false,
        Some([0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d]) => true,
        _ => return Vec::new(),
    };
    let mut at = 24;
    let mut out = Vec::new();
    while let Some(len) = b.get(at + 8..at + 12) {
        let len: [u8; 4] = len.try_into().unwrap();
        let len = if big {
            u32::from_be_bytes(len)
        } else {
            u32::from_le_bytes(len)
        } as usize;
        out.push((at, big));
        at += 16 + len;
    }
    out
}

fn mutate(rng: &mut Rng, bases: &[(String, Vec<u8>)]) -> (String, Vec<u8>) {
    let (name, base) = &bases[rng.below(bases.len())];
    let mut b = base.clone();
    let mut what = vec![name.clone()];
    for _ in 0..=rng.below(3) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len());
        match rng.below(8) {
            0 => {
                for _ in 0..=rng.below(8) {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
                what.push("bit flips".into());
            }
            1 => {
                b[at] = [0x00, 0xff, 0x7f, 0x80][rng.below(4)];
                what.push(format!("byte {at}"));
            }
            2 => {
                let w = [0u32, u32::MAX, 0x7fff_ffff, 0x8000_0000, 0x0400_0000, 1][rng.below(6)];
                let at = at & !3;
                if let Some(s) = b.get_mut(at..at + 4) {
                    s.copy_from_slice(&w.to_le_bytes());
                }
                what.push(format!("word {at} = {w:#x}"));
            }
            3 => {
                let recs = records(&b);
                if !recs.is_empty() {
                    let (r, big) = recs[rng.below(recs.len())];
                    let field = r + 8 + 4 * rng.below(2); // caplen or orig_len
                    if let Some(s) = b.get_mut(field..field + 4) {
                        let old: [u8; 4] = (&*s).try_into().unwrap();
                        let old = if big {
                            u32::from_be_bytes(old)
                        } else {
                            u32::from_le_bytes(old)
                        };
                        let v = match rng.below(4) {
                            0 => u32::MAX,
                            1 => 0,
                            2 => old.wrapping_add(1 + u32::try_from(rng.below(64)).unwrap()),
                            _ => old.wrapping_sub(1 + u32::try_from(rng.below(64)).unwrap()),
                        };
                        s.copy_from_slice(&if big {
                            v.to_be_bytes()
                        } else {
                            v.to_le_bytes()
                        });
                        what.push(format!("record at {r}: length field {v:#x}"));
                    }
                }
            }
            4 => {
                b.truncate(at);
                what.push(format!("cut at {at}"));
            }
            5 => {
                let (other, ob) = &bases[rng.below(bases.len())];
                let from = rng.below(ob.len());
                b.truncate(at);
                b.extend_from_slice(&ob[from..]);
                what.push(format!("spliced {other} from {from} at {at}"));
            }
            6 => {
                let len = rng.below(256).min(b.len() - at);
                let run = b[at..at + len].to_vec();
                let to = rng.below(b.len());
                b.splice(to..to, run);
                what.push(format!("duplicated {len} at {at}"));
            }
            _ => {
                let len = rng.below(64).min(b.len() - at);
                b.drain(at..at + len);
                what.push(format!("deleted {len} at {at}"));
            }
        }
    }
    (what.join(", "), b)
}

fn check(path: &Path, describe: &str, seed: u64) {
    let runs: [&[&str]; 3] = [
        &["-q", "dissect", "-f", "jsonl"],
        &["-q", "analyze", "-f", "json"],
        &["-q", "dissect", "-Y", FILTER],
    ];
    for args in runs {
        let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(args)
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = matches!(out.status.code(), Some(0 | 2))
            && err.lines().count() <= 1
            && !err.contains("panicked");
        assert!(
            ok,
            "mutant seed {seed} ({describe}) through {args:?}: status {:?}, stderr:\n{err}",
            out.status
        );
    }
}

#[test]
fn mutated_captures_never_panic_and_fail_in_one_line() {
    let bases = bases();
    assert!(
        bases.len() >= 20,
        "too few captures to mutate: {}",
        bases.len()
    );
    let dir = tempfile::tempdir().unwrap();
    if let Some(seed) = std::env::var("MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        let (describe, bytes) = mutate(&mut Rng(seed), &bases);
        let path = dir.path().join("mutant.pcap");
        std::fs::write(&path, bytes).unwrap();
        eprintln!("mutant {seed}: {describe}");
        check(&path, &describe, seed);
        return;
    }
    let started = Instant::now();
    let (next, completed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let workers = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .min(4);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (bases, next, completed, dir) = (&bases, &next, &completed, dir.path());
            s.spawn(move || {
                let path = dir.join(format!("mutant-{w}.pcap"));
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= MUTANTS || started.elapsed() > BUDGET {
                        break;
                    }
                    let seed = 0x5eed_0000 + i as u64;
                    let (describe, bytes) = mutate(&mut Rng(seed), bases);
                    std::fs::write(&path, bytes).unwrap();
                    check(&path, &describe, seed);
                    completed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let done = completed.load(Ordering::Relaxed);
    eprintln!("{done} mutants in {:.1} s", started.elapsed().as_secs_f64());
    assert!(done >= MIN_MUTANTS, "only {done} mutants in {BUDGET:?}");
}
