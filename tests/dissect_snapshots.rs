//! insta snapshots of `rocescope dissect` text and verbose output, run through
//! the real binary on demo captures (and one real capture when
//! `../shared/captures/real/` is there). Each slice is chosen to show one
//! thing a person reads the output for.

use std::path::Path;
use std::process::Command;

fn dissect(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("dissect")
        .args(args)
        .output()
        .expect("run rocescope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn text_go_back_n() {
    // loss_gbn: PSN 37 missing (36 then 38), the PSN sequence error NAK for 37,
    // packets already in flight up to 61, then the go-back-N resend from 37
    insta::assert_snapshot!(dissect(&["captures/loss_gbn.pcap", "--frames", "46-76"]));
}

#[test]
fn text_pfc_storm() {
    insta::assert_snapshot!(dissect(&[
        "captures/pfc_storm.pcap",
        "-Y",
        "pfc",
        "-c",
        "6",
        "--link-speed",
        "10G"
    ]));
}

#[test]
fn text_cnp_and_ecn() {
    insta::assert_snapshot!(dissect(&[
        "captures/incast_ecn.pcap",
        "-Y",
        "cnp || ce",
        "-c",
        "8"
    ]));
}

#[test]
fn text_read_responses_and_atomics() {
    insta::assert_snapshot!(dissect(&["captures/read_heavy.pcap", "--frames", "1-12"]));
    insta::assert_snapshot!(dissect(&[
        "captures/send_imm.pcap",
        "-Y",
        "opcode in {19 20 18} || infiniband.bth.opcode == 5",
        "-c",
        "8"
    ]));
}

#[test]
fn verbose_rdma_write_first_and_ack() {
    insta::assert_snapshot!(dissect(&[
        "-f",
        "verbose",
        "captures/clean_write.pcap",
        "--frames",
        "1-1"
    ]));
    insta::assert_snapshot!(dissect(&[
        "-f",
        "verbose",
        "captures/clean_write.pcap",
        "-Y",
        "opcode == RC_ACKNOWLEDGE",
        "-c",
        "1"
    ]));
}

#[test]
fn verbose_real_read_request() {
    let real = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/captures/real/softroce-read-request.pcap");
    if !real.exists() {
        eprintln!("skipping: {} is absent", real.display());
        return;
    }
    insta::assert_snapshot!(dissect(&["-f", "verbose", real.to_str().expect("path")]));
}
