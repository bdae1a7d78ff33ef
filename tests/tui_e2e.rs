//! `rocescope inspect` end to end: the real binary in a tmux pseudo-terminal, driven by keys.
//! Skipped (with a notice) where tmux is not installed.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    /// A tmux server of its own running `script` in a `width`×40 window; `None` (with a
    /// notice) where tmux is not installed.
    fn start(name: &str, width: u16, script: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("notice: tmux is not installed; skipping the {name} end-to-end test");
            return None;
        }
        let tmux = Tmux {
            socket: format!("rocescope-e2e-{name}-{}", std::process::id()),
        };
        let width = width.to_string();
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &width,
            "-y",
            "40",
            "sh",
            "-c",
            script,
        ]);
        Some(tmux)
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn literal(&self, text: &str) {
        self.run(&["send-keys", "-t", "e2e", "-l", text]);
    }

    fn wait_for(&self, what: &str) -> String {
        self.wait_until(what, |s| s.contains(what))
    }

    /// The screen once `ok` holds for it (the inspector redraws asynchronously: a status line
    /// can show before the list it describes).
    fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[test]
fn inspect_in_a_pty() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_rocescope");
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/loss_gbn.pcap");
    let d = dir.path().display();
    let script = format!(
        "stty -g > {d}/before; {bin} inspect {cap}; echo EXIT=$? > {d}/exit; stty -g > {d}/after; echo DONE; sleep 60",
        cap = cap.display()
    );
    let Some(tmux) = Tmux::start("inspect", 120, &script) else {
        return;
    };
    // the replay's count and the first rows (the replay can finish before the list shows)
    tmux.wait_until("the events counted and the first frames listed", |s| {
        s.contains("58 events") && s.contains("RC_RDMA_WRITE_FIRST QP=0x000601 PSN=0")
    });

    tmux.keys(&["f"]);
    tmux.wait_for("Filter:");
    tmux.literal("qp == 0x000600");
    tmux.keys(&["Enter"]);
    // the filtered list, once redrawn and read: QP 0x600's frames and none of the other
    // QP's (the old rows or an empty "reading…" list may show for a moment under the new
    // title; a filter that never takes effect times out and fails)
    let s = tmux.wait_until("the list filtered to QP 0x000600", |s| {
        s.contains("(filter: qp == 0x000600)")
            && s.contains("QP=0x000600")
            && !s.contains("QP=0x000601")
    });
    assert!(s.contains("RC_ACKNOWLEDGE QP=0x000600"), "{s}");

    // Events: the first is the gap at frame 47 (QP 0x601), hidden by the filter: the jump
    // drops the filter and selects the frame.
    tmux.keys(&["3"]);
    tmux.wait_for("psn_gap");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("Frame 47:");
    assert!(s.contains("Frames 47/306"), "{s}");

    tmux.keys(&["q"]);
    tmux.wait_for("DONE");
    let exit = std::fs::read_to_string(dir.path().join("exit")).unwrap();
    assert_eq!(exit.trim(), "EXIT=0");
    let before = std::fs::read_to_string(dir.path().join("before")).unwrap();
    let after = std::fs::read_to_string(dir.path().join("after")).unwrap();
    assert_eq!(before, after, "terminal modes restored");
    // Back on the main screen: the inspector's frame list is gone.
    let s = tmux.screen();
    assert!(!s.contains("RC_RDMA_WRITE_FIRST"), "{s}");
}

/// `inspect --tap A --tap B` in a pseudo-terminal: the flow table's columns of what happened
/// between the taps, the events between them, `T` to the other tap.
#[test]
fn inspect_two_taps_in_a_pty() {
    let bin = env!("CARGO_BIN_EXE_rocescope");
    let caps = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let script = format!(
        "{bin} inspect --tap {} --tap {}; echo DONE; sleep 60",
        caps.join("two_taps.tx.pcap").display(),
        caps.join("two_taps.rx.pcap").display()
    );
    let Some(tmux) = Tmux::start("inspect-tap", 160, &script) else {
        return;
    };
    tmux.wait_for("two_taps.tx.pcap (tap 0 of 2");
    tmux.keys(&["2"]);
    let s = tmux.wait_for("Reord");
    assert!(s.contains("Drop") && s.contains("Appr"), "{s}");
    tmux.keys(&["3"]);
    tmux.wait_for("between the taps)");
    // they follow the tap's own events: the last rows
    tmux.keys(&["G"]);
    let s = tmux.wait_for("_between");
    assert!(s.contains("tap 0 frame"), "{s}");
    tmux.keys(&["T"]);
    tmux.wait_for("two_taps.rx.pcap (tap 1 of 2");
    tmux.keys(&["q"]);
    tmux.wait_for("DONE");
}
