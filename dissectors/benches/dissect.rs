//! Whole-frame dissect (+ ICRC verify) of a 1 KiB RC WRITE frame and of an ACK, and of the
//! same WRITE as an ERSPAN III mirror session delivers it (outer Ethernet, IPv4, GRE with a
//! sequence number, ERSPAN III), with and without listing the outer layers.
//! Targets on the 2-core reference machine: ACK dissect < 30 ns, 1 KiB dissect + ICRC
//! < 150 ns, the ERSPAN-III-wrapped WRITE within 1.3x the bare one.
//! Run: `cargo bench -p rocescope-dissectors`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rocescope_dissectors::stack;

mod frames;
use frames::{ack, erspan3, write_1k};

fn bench(c: &mut Criterion) {
    let write = write_1k();
    let ack = ack();
    assert!(
        stack::dissect(&write).expect("write").icrc_status()
            == rocescope_dissectors::icrc::IcrcStatus::Valid
    );
    let mirrored = erspan3(&write);
    let d = stack::dissect(&mirrored).expect("mirrored write");
    assert!(d.is_encapsulated() && d.roce.is_some());
    assert!(d.icrc_status() == rocescope_dissectors::icrc::IcrcStatus::Valid);

    let mut g = c.benchmark_group("dissect");
    g.throughput(Throughput::Elements(1));
    g.bench_function("ack", |b| {
        b.iter(|| {
            let d = stack::dissect(black_box(&ack)).expect("ack");
            black_box(d.roce.as_ref().map(|r| r.bth.psn()))
        });
    });
    g.bench_function("ack+icrc", |b| {
        b.iter(|| black_box(stack::dissect(black_box(&ack)).expect("ack").icrc_status()));
    });
    g.bench_function("write_1k", |b| {
        b.iter(|| {
            let d = stack::dissect(black_box(&write)).expect("write");
            black_box(d.roce.as_ref().map(|r| r.bth.psn()))
        });
    });
    g.bench_function("write_1k+icrc", |b| {
        b.iter(|| {
            black_box(
                stack::dissect(black_box(&write))
                    .expect("write")
                    .icrc_status(),
            )
        });
    });
    g.bench_function("write_1k_erspan3", |b| {
        b.iter(|| {
            let d = stack::dissect(black_box(&mirrored)).expect("write");
            black_box(d.roce.as_ref().map(|r| r.bth.psn()))
        });
    });
    g.bench_function("write_1k_erspan3+icrc", |b| {
        b.iter(|| {
            black_box(
                stack::dissect(black_box(&mirrored))
                    .expect("write")
                    .icrc_status(),
            )
        });
    });
    // what the text line and the JSON do on top: list the outer layers again
    g.bench_function("write_1k_erspan3+outer", |b| {
        b.iter(|| {
            let d = stack::dissect(black_box(&mirrored)).expect("write");
            black_box(d.outer_layers().iter().count())
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
