//! Live capture end to end (interfaces.md §11), on a veth pair between two network namespaces
//! each test makes for itself: `rocescope send` of a scenario in one, `rocescope capture`,
//! `analyze -i`, `dissect -i` or `inspect -i` in the other. The frames captured are compared
//! byte for byte with the frames `rocescope generate` writes for the same scenario and seed.
//!
//! Skipped with a notice where namespaces cannot be made (not root, no `ip`). With the cargo
//! feature `libpcap` every capture test runs through libpcap too.
#![cfg(feature = "live")]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rocescope::capture::CaptureReader;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scenario(name: &str) -> PathBuf {
    root()
        .join("generator/scenarios")
        .join(format!("{name}.toml"))
}

/// The backends this build has.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["packet"];
    if cfg!(feature = "libpcap") {
        b.push("libpcap");
    }
    b
}

/// Two namespaces joined by a veth pair (`tx` in one, `rx` in the other), removed on drop.
struct Veth {
    tx_ns: String,
    rx_ns: String,
    tx: String,
    rx: String,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Veth {
    /// `None` (after a notice) where namespaces cannot be made here.
    fn new() -> Option<Veth> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}{n}", std::process::id() % 100_000);
        let v = Veth {
            tx_ns: format!("rstx{id}"),
            rx_ns: format!("rsrx{id}"),
            tx: format!("rst{id}"),
            rx: format!("rsr{id}"),
        };
        if !ip(&["netns", "add", &v.tx_ns]) {
            eprintln!(
                "notice: cannot make network namespaces here (not root?); live tests skipped"
            );
            return None;
        }
        let ok = ip(&["netns", "add", &v.rx_ns])
            && ip(&[
                "link", "add", &v.tx, "netns", &v.tx_ns, "type", "veth", "peer", "name", &v.rx,
                "netns", &v.rx_ns,
            ]);
        if !ok {
            eprintln!("notice: cannot make a veth pair here; live tests skipped");
            return None;
        }
        for (ns, dev) in [(&v.tx_ns, &v.tx), (&v.rx_ns, &v.rx)] {
            // no IPv6 (its router solicitations would be the only other traffic), jumbo frames
            let _ = Command::new("ip")
                .args(["netns", "exec", ns, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{dev}.disable_ipv6=1"))
                .status();
            assert!(ip(&["-n", ns, "link", "set", dev, "mtu", "9500", "up"]));
        }
        Some(v)
    }

    fn in_rx(&self) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.rx_ns, BIN]);
        c
    }

    /// `rocescope send SCENARIO` on the tx end, to completion.
    fn send(&self, scenario: &Path, extra: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.tx_ns, BIN, "send"])
            .arg(scenario)
            .args(["-i", &self.tx])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "send: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.tx_ns]);
        ip(&["netns", "del", &self.rx_ns]);
    }
}

/// A rocescope process on the rx end, its stderr read on a thread.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut r = Running {
            child,
            lines,
            seen: Vec::new(),
        };
        r.wait_for("capturing on");
        r
    }

    /// Waits (at most 20 s) for a stderr line containing `text`.
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {text:?} on stderr; saw {:?}", self.seen),
            }
        }
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-s", sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    }

    /// Waits for the exit (at most 20 s); the exit code, stdout and the rest of stderr.
    fn finish(mut self) -> (i32, String, Vec<String>) {
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("did not end; stderr {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.seen.extend(self.lines.try_iter());
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(l);
        }
        (status.code().unwrap_or(-1), stdout, self.seen)
    }
}

/// The frames of a capture file: (bytes, original length).
fn frames(path: &Path) -> Vec<(Vec<u8>, u32)> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame() {
        let f = f.unwrap();
        out.push((f.data.to_vec(), f.orig_len));
    }
    out
}

/// What `generate` writes for `scenario` (seed 1): the bytes `send` puts on the wire, and
/// whether the kernel filter keeps each frame (what rocescope decodes, or a tunnel).
fn generated(name: &str, dir: &Path) -> Vec<(Vec<u8>, bool)> {
    let out = dir.join(format!("{name}.pcap"));
    let st = Command::new(BIN)
        .args(["-q", "generate"])
        .arg(scenario(name))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let dissected = common::jsonl(&out, &[]);
    frames(&out)
        .into_iter()
        .zip(dissected)
        .map(|((bytes, _), d)| {
            let ours = ["bth", "pfc", "pause", "tcp_bth", "outer"]
                .iter()
                .any(|k| d.get(k).is_some());
            (bytes, ours)
        })
        .collect()
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn capture_holds_exactly_the_frames_sent() {
    let Some(net) = Veth::new() else { return };
    let dir = tempdir();
    for backend in backends() {
        for name in [
            "mixed",
            "vlan_pcp3",
            "ipv6",
            "tcp_bth_clean",
            "pfc_storm",
            "vxlan_overlay",
        ] {
            let sent = generated(name, dir.path());
            let kept: Vec<&Vec<u8>> = sent.iter().filter(|(_, k)| *k).map(|(b, _)| b).collect();
            let file = dir.path().join(format!("{name}-{backend}.pcapng"));
            let mut cmd = net.in_rx();
            cmd.args(["capture", "-i", &net.rx, "--backend", backend, "-w"])
                .arg(&file)
                .args(["-c", &kept.len().to_string(), "--duration", "30s"]);
            let cap = Running::start(cmd);
            net.send(&scenario(name), &[]);
            let (code, _, err) = cap.finish();
            assert_eq!(code, 0, "{name} {backend}: {err:?}");
            let got = frames(&file);
            assert_eq!(got.len(), kept.len(), "{name} {backend}: frames captured");
            for (i, ((bytes, orig), want)) in got.iter().zip(&kept).enumerate() {
                assert_eq!(&bytes, want, "{name} {backend}: frame {}", i + 1);
                assert_eq!(
                    *orig as usize,
                    bytes.len(),
                    "{name} {backend}: frame {}",
                    i + 1
                );
            }
            let last = err.last().cloned().unwrap_or_default();
            assert!(
                last.contains(&format!(
                    "{} frames captured, 0 dropped by the kernel",
                    kept.len()
                )),
                "{last}"
            );
        }
        // --all takes the frames the default filter leaves (tcp_bth_clean's plain ACKs)
        let sent = generated("tcp_bth_clean", dir.path());
        assert!(
            sent.iter().any(|(_, k)| !k),
            "the scenario has frames the filter drops"
        );
        let file = dir.path().join(format!("all-{backend}.pcapng"));
        let mut cmd = net.in_rx();
        cmd.args([
            "capture",
            "-i",
            &net.rx,
            "--all",
            "--backend",
            backend,
            "-w",
        ])
        .arg(&file)
        .args(["-c", &sent.len().to_string()]);
        let cap = Running::start(cmd);
        net.send(&scenario("tcp_bth_clean"), &[]);
        assert_eq!(cap.finish().0, 0);
        let got: Vec<Vec<u8>> = frames(&file).into_iter().map(|(b, _)| b).collect();
        let want: Vec<Vec<u8>> = sent.into_iter().map(|(b, _)| b).collect();
        assert_eq!(got, want, "--all {backend}");
        // --snaplen cuts, and the original length stays
        let file = dir.path().join(format!("snap-{backend}.pcapng"));
        let mut cmd = net.in_rx();
        cmd.args([
            "capture",
            "-i",
            &net.rx,
            "--snaplen",
            "100",
            "--backend",
            backend,
            "-w",
        ])
        .arg(&file)
        .args(["-c", "50"]);
        let cap = Running::start(cmd);
        net.send(&scenario("clean_write"), &["-c", "50"]);
        assert_eq!(cap.finish().0, 0);
        let sent = generated("clean_write", dir.path());
        for ((bytes, orig), (want, _)) in frames(&file).iter().zip(&sent) {
            assert_eq!(bytes.as_slice(), &want[..want.len().min(100)]);
            assert_eq!(*orig as usize, want.len());
        }
    }
}

/// The JSON report without what depends on the instant each socket stamped a frame (two
/// sockets on one interface stamp the same frame some hundred ns apart).
fn untimed(mut v: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|k, _| !k.ends_with("_ns") && k != "files" && k != "kernel_drops");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn analyze_live_reports_what_analyze_reports_on_the_capture() {
    let Some(net) = Veth::new() else { return };
    let dir = tempdir();
    for backend in backends() {
        for name in [
            "mixed",
            "loss_gbn",
            "pfc_storm",
            "tcp_bth_faults",
            "reorder",
        ] {
            let file = dir.path().join(format!("{name}-{backend}.pcapng"));
            let json = dir.path().join(format!("{name}-{backend}.json"));
            let mut cmd = net.in_rx();
            cmd.args(["capture", "-i", &net.rx, "--backend", backend, "-w"])
                .arg(&file);
            let capture = Running::start(cmd);
            let mut cmd = net.in_rx();
            cmd.args([
                "analyze",
                "-i",
                &net.rx,
                "--backend",
                backend,
                "-f",
                "json",
                "-o",
            ])
            .arg(&json);
            let live = Running::start(cmd);
            net.send(&scenario(name), &[]);
            std::thread::sleep(Duration::from_millis(300));
            live.signal("INT");
            let (code, _, err) = live.finish();
            assert_eq!(code, 0, "{err:?}");
            capture.signal("INT");
            assert_eq!(capture.finish().0, 0);
            let live_report: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            assert_eq!(live_report["capture"]["kernel_drops"], 0, "{name}");
            assert!(
                live_report["capture"]["frames"].as_u64().unwrap() > 0,
                "{name}"
            );
            let file_report = Command::new(BIN)
                .args(["analyze", "-f", "json"])
                .arg(&file)
                .output()
                .unwrap();
            let file_report: serde_json::Value =
                serde_json::from_slice(&file_report.stdout).unwrap();
            let live_report = untimed(live_report);
            assert_eq!(
                live_report,
                untimed(file_report),
                "{name} {backend}: analyze -i and analyze of the capture differ"
            );
            // where every frame passes the kernel filter whole (no cut frames, no plain TCP),
            // the report is the one of the file `generate` writes, but for timings
            if ["loss_gbn", "pfc_storm", "reorder"].contains(&name) {
                let generated = dir.path().join(format!("{name}.pcap"));
                let st = Command::new(BIN)
                    .args(["-q", "generate"])
                    .arg(scenario(name))
                    .arg("-o")
                    .arg(&generated)
                    .status()
                    .unwrap();
                assert!(st.success());
                let out = Command::new(BIN)
                    .args(["analyze", "-f", "json"])
                    .arg(&generated)
                    .output()
                    .unwrap();
                let want: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(
                    live_report,
                    untimed(want),
                    "{name} {backend}: vs the generated file"
                );
            }
        }
    }
}

#[test]
fn sigint_and_sigterm_leave_a_valid_capture_holding_every_frame_counted() {
    let Some(net) = Veth::new() else { return };
    let dir = tempdir();
    let tshark = Command::new("tshark").arg("-v").output().is_ok();
    for sig in ["INT", "TERM"] {
        let file = dir.path().join(format!("sig{sig}.pcapng"));
        let mut cmd = net.in_rx();
        cmd.args(["capture", "-i", &net.rx, "-w"]).arg(&file);
        let cap = Running::start(cmd);
        // a steady stream, still going when the signal comes
        let tx_ns = net.tx_ns.clone();
        let tx = net.tx.clone();
        let sender = std::thread::spawn(move || {
            Command::new("ip")
                .args(["netns", "exec", &tx_ns, BIN, "send"])
                .arg(scenario("read_heavy"))
                .args(["-i", &tx, "--rate", "20Kpps", "--duration", "2s"])
                .output()
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(700));
        cap.signal(sig);
        let (code, _, err) = cap.finish();
        sender.join().unwrap();
        assert_eq!(code, 0, "SIG{sig}: {err:?}");
        let line = err.last().cloned().unwrap_or_default();
        let counted: usize = line
            .split_whitespace()
            .zip(line.split_whitespace().skip(1))
            .find(|(_, w)| *w == "frames")
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in {line:?}"));
        assert!(
            counted > 100,
            "SIG{sig}: only {counted} frames before the signal"
        );
        assert_eq!(frames(&file).len(), counted, "SIG{sig}");
        if tshark {
            let out = Command::new("tshark")
                .arg("-r")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "tshark: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // (tshark warns when it runs as root; anything else is a complaint about the file)
            let complaints: Vec<_> = String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| !l.contains("Running as user"))
                .map(str::to_owned)
                .collect();
            assert!(complaints.is_empty(), "tshark: {complaints:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).lines().count(),
                counted
            );
        }
    }
}

/// Frames the receive backlog dropped before any socket saw them (`/proc/net/softnet_stat`).
fn backlog_drops() -> u64 {
    std::fs::read_to_string("/proc/net/softnet_stat")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .sum()
}

/// A consumer slower than `send` at full rate behind a small buffer: the kernel drops frames,
/// and the count rocescope reports is exactly the kernel's (sent = captured + dropped).
#[test]
fn drops_at_full_rate_are_reported_exactly() {
    let Some(net) = Veth::new() else { return };
    let dir = tempdir();
    let bulk = dir.path().join("bulk.toml");
    std::fs::write(
        &bulk,
        r#"
[link]
speed_gbps = 400
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
messages = 100
"#,
    )
    .unwrap();
    for backend in backends() {
        let mut cmd = net.in_rx();
        // the verbose tree is the slowest output there is
        cmd.args([
            "dissect",
            "-i",
            &net.rx,
            "-B",
            "8M",
            "-f",
            "verbose",
            "--backend",
            backend,
        ]);
        let mut run = Running::start(cmd);
        let mut out = run.child.stdout.take().unwrap();
        let drain = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let before = backlog_drops();
        let sent = net.send(&bulk, &[]);
        std::thread::sleep(Duration::from_millis(500));
        let backlog = backlog_drops() - before;
        run.signal("INT");
        let (code, _, err) = run.finish();
        drain.join().unwrap().unwrap();
        assert_eq!(code, 0, "{err:?}");
        let n_sent: u64 = sent.split_whitespace().nth(1).unwrap().parse().unwrap();
        let last = err.last().unwrap();
        let nums: Vec<u64> = last
            .split_whitespace()
            .filter_map(|w| w.trim_end_matches(',').parse().ok())
            .collect();
        let (captured, dropped) = (nums[0], nums[1]);
        eprintln!("{backend}: {sent} -> {last} (backlog drops {backlog})");
        // exact when the backlog dropped nothing (its counter is the machine's: other tests'
        // traffic counts there too)
        assert!(captured + dropped <= n_sent, "{backend}: {last}");
        assert!(
            n_sent - (captured + dropped) <= backlog,
            "{backend}: {last}"
        );
        assert!(captured > 0, "{backend}: {last}");
    }
}

#[test]
fn analyze_live_reports_new_findings_as_they_come() {
    let Some(net) = Veth::new() else { return };
    let mut cmd = net.in_rx();
    cmd.args([
        "analyze",
        "-i",
        &net.rx,
        "--report-every",
        "100ms",
        "-f",
        "json",
        "-o",
        "/dev/null",
    ]);
    let mut run = Running::start(cmd);
    net.send(&scenario("loss_gbn"), &[]);
    // a line for the lossy flow while the capture still runs
    let line = run.wait_for("psn_gap");
    assert!(line.contains("flow ") && line.contains("QP 0x"), "{line}");
    assert!(run.child.try_wait().unwrap().is_none());
    run.signal("TERM");
    let (code, _, err) = run.finish();
    assert_eq!(code, 0, "{err:?}");
    assert!(
        err.last().unwrap().contains("0 dropped by the kernel"),
        "{err:?}"
    );
}

#[test]
fn ring_rotation_keeps_the_newest_files() {
    let Some(net) = Veth::new() else { return };
    let dir = tempdir();
    let base = dir.path().join("ring.pcapng");
    let mut cmd = net.in_rx();
    cmd.args([
        "capture",
        "-i",
        &net.rx,
        "--ring",
        "3",
        "--ring-size",
        "64K",
        "-w",
    ])
    .arg(&base)
    .args(["-c", "729"]);
    let run = Running::start(cmd);
    net.send(&scenario("mixed"), &[]);
    assert_eq!(run.finish().0, 0);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // 600 KB in 64 KB files: about ten made, the last three kept, numbered on
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("ring_") && n.ends_with(".pcapng")),
        "{names:?}"
    );
    assert!(names[0].as_str() > "ring_00005.pcapng", "{names:?}");
    // each a whole capture, the last frames of the run in order
    let sent: Vec<Vec<u8>> = generated("mixed", &tempdir().keep())
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    let kept: Vec<Vec<u8>> = files
        .iter()
        .flat_map(|f| frames(f))
        .map(|(b, _)| b)
        .collect();
    assert!(kept.len() > 100 && kept.len() < 729, "{}", kept.len());
    assert_eq!(kept[..], sent[sent.len() - kept.len()..]);
}

#[test]
fn dissect_live_prints_frames_as_they_arrive() {
    let Some(net) = Veth::new() else { return };
    let mut cmd = net.in_rx();
    cmd.args(["dissect", "-i", &net.rx]);
    let mut run = Running::start(cmd);
    net.send(&scenario("clean_write"), &["-c", "10"]);
    // ten lines while it still runs: written out as they came, not at the end
    let mut out = BufReader::new(run.child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..10 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l);
    }
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "dissect -i ended by itself"
    );
    assert!(lines.iter().all(|l| l.contains("RoCEv2")), "{lines:?}");
    assert!(lines[9].trim_start().starts_with("10 "), "{lines:?}");
    run.signal("INT");
    assert_eq!(run.finish().0, 0);
}

#[test]
fn inspect_live_shows_frames_and_flows_as_they_come() {
    let Some(net) = Veth::new() else { return };
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("notice: no tmux; inspect -i test skipped");
        return;
    }
    let session = format!("rslive{}", std::process::id());
    let cmd = format!("ip netns exec {} {BIN} inspect -i {}", net.rx_ns, net.rx);
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "160",
            "-y",
            "40",
            &cmd,
        ])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let screen = || {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let wait = |what: &dyn Fn(&str) -> bool| -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let s = screen();
            if what(&s) || Instant::now() > deadline {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let s = wait(&|s| s.contains("live on"));
    assert!(s.contains(&format!("live on {}", net.rx)), "{s}");
    net.send(&scenario("clean_write"), &["-c", "40"]);
    let s = wait(&|s| s.contains("· 40 frames") && s.contains("flows"));
    assert!(s.contains("· 40 frames"), "{s}");
    // the list follows the newest frame
    assert!(s.lines().any(|l| l.starts_with("│40 ")), "{s}");
    net.send(&scenario("mixed"), &["-c", "60"]);
    let s = wait(&|s| s.contains("· 100 frames"));
    assert!(
        s.contains("· 100 frames") && s.contains("0 dropped by the kernel"),
        "{s}"
    );
    assert!(s.lines().any(|l| l.starts_with("│100 ")), "{s}");
    // the flow table has the flows of both sends
    Command::new("tmux")
        .args(["send-keys", "-t", &session, "2"])
        .status()
        .unwrap();
    let s = wait(&|s| s.contains("10.0.11.3"));
    assert!(s.contains("Flows") && s.contains("10.0.11.3"), "{s}");
    Command::new("tmux")
        .args(["send-keys", "-t", &session, "q"])
        .status()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .stderr(Stdio::null())
        .status();
}

#[test]
fn errors_are_one_line_and_exit_2() {
    let dir = tempdir();
    let out_file = dir.path().join("x.pcapng");
    for args in [
        vec!["capture", "-i", "nosuch0", "-w", out_file.to_str().unwrap()],
        vec!["analyze", "-i", "nosuch0"],
        vec!["dissect", "-i", "nosuch0"],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("nosuch0: no such interface; available:"),
            "{err}"
        );
    }
    assert!(!out_file.exists(), "a failed capture left a file");
    if !cfg!(feature = "libpcap") {
        let out = Command::new(BIN)
            .args(["capture", "-i", "lo", "--backend", "libpcap", "-w"])
            .arg(&out_file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            err.contains("--features libpcap") && err.lines().count() == 1,
            "{err}"
        );
    }
    // without CAP_NET_RAW (as nobody, or root without the capability)
    let unprivileged = |args: &[&str]| {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(BIN)
            .args(args)
            .output()
    };
    match unprivileged(&["capture", "-i", "lo", "-w", "/dev/null"]) {
        Ok(out) if !String::from_utf8_lossy(&out.stderr).contains("setpriv:") => {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains("CAP_NET_RAW"), "{err}");
            let out = unprivileged(&["analyze", "-i", "lo"]).unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains("CAP_NET_RAW") && err.lines().count() == 1,
                "{err}"
            );
        }
        _ => eprintln!("notice: setpriv cannot drop privileges here; the CAP_NET_RAW test skipped"),
    }
}
