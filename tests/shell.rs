//! `rocescope completions` and `rocescope man`, checked by the programs that use them: bash
//! sources the completion script and completes from it; `man -l` renders the page.

use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn output(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_sources_the_completion_script_and_completes_subcommands_and_flags() {
    let script = output(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rocescope.bash");
    std::fs::write(&path, &script).unwrap();
    // source it, then ask the completion function what `rocescope ana<Tab>` and
    // `rocescope capture --ri<Tab>` complete to, as bash's completion would
    let probe = format!(
        r#"set -e
source {path}
complete -p rocescope
complete_for() {{ COMP_WORDS=("$@"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMP_LINE="$*"; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); _rocescope rocescope "${{COMP_WORDS[-1]}}" "${{COMP_WORDS[-2]}}"; echo "${{COMPREPLY[@]}}"; }}
complete_for rocescope ana
complete_for rocescope capture --ri
"#,
        path = path.display()
    );
    let out = Command::new("bash").arg("-c").arg(&probe).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("-F _rocescope rocescope"), "{stdout}");
    assert_eq!(lines[1].trim(), "analyze", "{stdout}");
    assert!(
        lines[2]
            .split_whitespace()
            .any(|w| w == "--ring" || w == "--ring-size"),
        "{stdout}"
    );
}

#[test]
fn zsh_and_fish_scripts_name_every_subcommand() {
    for shell in ["zsh", "fish"] {
        let script = output(&["completions", shell]);
        for sub in [
            "dissect", "analyze", "inspect", "capture", "generate", "send",
        ] {
            assert!(script.contains(sub), "{shell}: no {sub}");
        }
    }
    let out = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_renders_with_man_l() {
    let page = output(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH rocescope"),
        "not roff"
    );
    let Ok(mut man) = Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("notice: no man here; the man page is not rendered");
        return;
    };
    man.stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = man.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "man: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // without a terminal, man prints bold and underline as overstrikes (`N\bN`): undo them
    let mut text = String::new();
    for c in String::from_utf8_lossy(&out.stdout).chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    for want in [
        "NAME",
        "SYNOPSIS",
        "OPTIONS",
        "ANALYZE",
        "CAPTURE",
        "--fail-on",
        "--ring-size",
    ] {
        assert!(text.contains(want), "the rendered page has no {want}");
    }
    // troff may say a long line could not be adjusted; anything else is a broken page
    let complaints: Vec<_> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.contains("cannot adjust line"))
        .map(str::to_owned)
        .collect();
    assert!(complaints.is_empty(), "{complaints:?}");
}
