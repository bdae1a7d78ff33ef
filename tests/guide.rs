//! docs/guide.md cannot drift from the tool: every command in it that starts with `$` runs here
//! (from the repository root, `rocescope` being the binary under test) and must exit as the
//! guide says (`# exit: N`, 0 when not given) and print the `# expect:` text under it (stdout or
//! stderr).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

struct Example {
    line: usize,
    command: String,
    expect: Vec<String>,
    exit: i32,
}

fn examples(text: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Example {
                line: i + 1,
                command: cmd.to_owned(),
                expect: Vec::new(),
                exit: 0,
            });
        } else if let Some(e) = line.strip_prefix("# expect: ") {
            out.last_mut()
                .expect("an expect under a command")
                .expect
                .push(e.to_owned());
        } else if let Some(code) = line.strip_prefix("# exit: ") {
            out.last_mut().expect("an exit under a command").exit = code.trim().parse().unwrap();
        }
    }
    out
}

#[test]
fn every_command_of_the_guide_runs_as_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("docs/guide.md")).unwrap();
    let all = examples(&text);
    assert!(all.len() >= 12, "{} commands", all.len());
    for ex in &all {
        assert!(
            !ex.expect.is_empty(),
            "guide line {}: no # expect:",
            ex.line
        );
        let words: Vec<&str> = ex.command.split_whitespace().collect();
        assert_eq!(words[0], "rocescope", "guide line {}", ex.line);
        // the guide quotes arguments as a shell does; none holds a space inside quotes but the
        // filters, which are one quoted word each
        let mut args = Vec::new();
        let mut quoted: Option<String> = None;
        for w in &words[1..] {
            match quoted.as_mut() {
                Some(q) => {
                    q.push(' ');
                    q.push_str(w);
                    if w.ends_with('\'') {
                        args.push(q.trim_matches('\'').to_owned());
                        quoted = None;
                    }
                }
                None if w.starts_with('\'') && !(w.len() > 1 && w.ends_with('\'')) => {
                    quoted = Some((*w).to_owned());
                }
                None => args.push(w.trim_matches('\'').to_owned()),
            }
        }
        let out = Command::new(BIN)
            .args(&args)
            .current_dir(root)
            .output()
            .unwrap();
        let all_out = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            out.status.code(),
            Some(ex.exit),
            "guide line {}: {}\n{all_out}",
            ex.line,
            ex.command
        );
        for e in &ex.expect {
            assert!(
                all_out.contains(e.as_str()),
                "guide line {}: no {e:?} in\n{all_out}",
                ex.line
            );
        }
    }
}
