//! `dissect -r FILE -T fields -e …` prints byte for byte what `tshark -r FILE -T fields -e …`
//! prints, for 37 common fields of every layer rocescope decodes (frame, eth, vlan, ip, ipv6, udp,
//! the BTH and RETH, AETH, DETH, MAC Control), on every demo and real capture, and with tshark's
//! `-E` layouts. Skipped with a notice where tshark is missing.
//!
//! The one kind of line allowed to differ, each counted: a frame in which tshark's payload
//! heuristics decoded the RDMA payload as another protocol (its `frame.protocols` goes on past
//! `infiniband` with something other than `data`), when the guessed inner layers add values
//! rocescope does not invent (a UD payload taken for EoIB and its Ethernet addresses). (`infiniband.invariant.crc` is not in the list: tshark reads the last four captured
//! bytes of a cut frame as the ICRC and shows none on a CNP, where rocescope reports the ICRC as
//! not verifiable and shows it, respectively.)

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

const FIELDS: [&str; 37] = [
    "frame.number",
    "frame.len",
    "frame.cap_len",
    "frame.time_epoch",
    "frame.time_relative",
    "eth.src",
    "eth.dst",
    "vlan.id",
    "vlan.priority",
    "ip.src",
    "ip.dst",
    "ip.ttl",
    "ip.proto",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ipv6.src",
    "ipv6.dst",
    "udp.srcport",
    "udp.dstport",
    "udp.length",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.bth.se",
    "infiniband.bth.m",
    "infiniband.bth.a",
    "infiniband.bth.padcnt",
    "infiniband.bth.tver",
    "infiniband.bth.p_key",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "macc.opcode",
];

fn tshark_present() -> bool {
    let ok = Command::new("tshark").arg("-v").output().is_ok();
    if !ok {
        eprintln!("notice: tshark is not installed; -T fields is not compared with it");
    }
    ok
}

fn captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for dir in [root.join("captures"), root.join("../shared/captures/real")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("notice: {} is not there", dir.display());
            continue;
        };
        all.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng")),
        );
    }
    all.sort();
    all
}

fn lines(cmd: &mut Command) -> Vec<String> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn with_fields(cmd: &mut Command, fields: &[&str]) {
    for f in fields {
        cmd.args(["-e", f]);
    }
}

/// Frames where tshark decoded the RDMA payload as something (a heuristic guess).
fn payload_guesses(capture: &Path) -> Vec<bool> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(capture)
        .args(["-T", "fields", "-e", "frame.protocols"]);
    lines(&mut cmd)
        .iter()
        .map(|p| {
            p.split(':')
                .skip_while(|l| *l != "infiniband")
                .skip(1)
                .any(|l| l != "data")
        })
        .collect()
}

#[test]
fn fields_match_tshark_on_every_capture() {
    if !tshark_present() {
        return;
    }
    let (mut compared, mut guessed, mut files) = (0usize, 0usize, 0usize);
    for capture in captures() {
        let mut ours = Command::new(BIN);
        ours.args(["dissect", "-r"])
            .arg(&capture)
            .args(["-T", "fields"]);
        with_fields(&mut ours, &FIELDS);
        let mut theirs = Command::new("tshark");
        theirs.arg("-r").arg(&capture).args(["-T", "fields"]);
        with_fields(&mut theirs, &FIELDS);
        let (ours, theirs) = (lines(&mut ours), lines(&mut theirs));
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{}: frame count",
            capture.display()
        );
        let guesses = payload_guesses(&capture);
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            compared += 1;
            if a != b && guesses.get(i).copied().unwrap_or(false) {
                guessed += 1;
                continue;
            }
            assert_eq!(a, b, "{} frame {}", capture.display(), i + 1);
        }
        files += 1;
    }
    assert!(files >= 30, "{files} captures");
    assert!(compared > 5_000, "{compared} frames compared");
    assert!(
        guessed <= 2,
        "{guessed} frames differ where tshark guessed at the payload"
    );
}

#[test]
fn field_layouts_match_tshark() {
    if !tshark_present() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // tunnelled frames: two values of ip.src, eth.src, udp.dstport per frame
    let capture = root.join("captures/vxlan_overlay.pcap");
    let fields = [
        "frame.number",
        "eth.src",
        "ip.src",
        "vlan.id",
        "udp.dstport",
    ];
    for layout in [
        &["-E", "header=y", "-E", "quote=d"][..],
        &["-E", "separator=,", "-E", "quote=s", "-E", "aggregator=/s"],
        &["-E", "occurrence=f", "-E", "separator=/s"],
        &["-E", "occurrence=l", "-E", "header=y", "-E", "separator=|"],
    ] {
        let mut ours = Command::new(BIN);
        ours.args(["dissect", "-r"])
            .arg(&capture)
            .args(["-T", "fields"])
            .args(layout);
        with_fields(&mut ours, &fields);
        let mut theirs = Command::new("tshark");
        theirs
            .arg("-r")
            .arg(&capture)
            .args(["-T", "fields"])
            .args(layout);
        with_fields(&mut theirs, &fields);
        assert_eq!(lines(&mut ours), lines(&mut theirs), "{layout:?}");
    }
}

#[test]
fn tshark_flags_are_rocescope_flags() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let capture = root.join("captures/loss_gbn.pcap");
    // -V is -f verbose, -T text the summary lines, -T ek / -T json the JSON lines
    let same = |a: &[&str], b: &[&str]| {
        let mut x = Command::new(BIN);
        x.arg("dissect").args(a).arg(&capture);
        let mut y = Command::new(BIN);
        y.arg("dissect").args(b).arg(&capture);
        assert_eq!(lines(&mut x), lines(&mut y), "{a:?} vs {b:?}");
    };
    same(&["-V"], &["-f", "verbose"]);
    same(&["-T", "text"], &[]);
    same(&["-T", "ek"], &["-f", "jsonl"]);
    // one-line errors
    for (args, want) in [
        (
            &["-T", "fields"][..],
            "-T fields: name the columns with -e FIELD",
        ),
        (
            &["-T", "fields", "-e", "no.such.field"],
            "-e no.such.field: not a field",
        ),
        (
            &["-T", "fields", "-e", "ip.src", "-E", "colour=y"],
            "-E colour=y: not a tshark field option",
        ),
        (&["-e", "ip.src"], "-e: the columns are for -T fields"),
    ] {
        let out = Command::new(BIN)
            .arg("dissect")
            .args(args)
            .arg(&capture)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            err.contains(want) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}
