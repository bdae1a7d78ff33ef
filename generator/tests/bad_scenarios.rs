//! Bad scenarios fail with `FILE:LINE: KEY: reason`.

use rocescope_generator::Scenario;

const GOOD: &str = r#"
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
start_psn = 0
pmtu = 1024

[[traffic]]
connection = "c"
op = "write"
size = 100
messages = 3
"#;

fn err(text: &str) -> String {
    Scenario::from_toml(text, "bad.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn good_parses() {
    let s = Scenario::from_toml(GOOD, "good.toml").unwrap();
    assert_eq!(s.connections[0].pmtu, 1024);
}

#[test]
fn unknown_key() {
    let text = GOOD.replace("pmtu = 1024", "pmtu = 1024\nack_evry = 4");
    assert_eq!(
        err(&text).split(": ").take(2).collect::<Vec<_>>(),
        ["bad.toml:21", "connection.ack_evry"],
        "{}",
        err(&text)
    );
    assert!(err(&text).contains("unknown field"), "{}", err(&text));
}

#[test]
fn psn_out_of_range() {
    let text = GOOD.replace("start_psn = 0", "start_psn = 16777216");
    let e = err(&text);
    assert!(e.starts_with("bad.toml:19: connection.start_psn: "), "{e}");
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn pmtu_not_power_of_two() {
    let text = GOOD.replace("pmtu = 1024", "pmtu = 1000");
    let e = err(&text);
    assert!(e.starts_with("bad.toml:20: connection.pmtu: "), "{e}");
    assert!(e.contains("1000"), "{e}");
}

#[test]
fn missing_host() {
    let text = GOOD.replace("responder = \"b\"", "responder = \"z\"");
    let e = err(&text);
    assert!(e.starts_with("bad.toml:16: connection.responder: "), "{e}");
    assert!(e.contains("unknown host \"z\""), "{e}");
}

#[test]
fn wrong_type() {
    let text = GOOD.replace("requester_qpn = 17", "requester_qpn = \"x\"");
    let e = err(&text);
    assert!(
        e.starts_with("bad.toml:17: connection.requester_qpn: "),
        "{e}"
    );
}

#[test]
fn missing_required_field() {
    let text = GOOD.replace("ip = \"10.0.0.2\"\n", "");
    let e = err(&text);
    assert!(e.contains("host.ip"), "{e}");
    assert!(e.starts_with("bad.toml:"), "{e}");
}

#[test]
fn syntax_error() {
    let e = err("[[host]\nname = 1\n");
    assert!(e.starts_with("bad.toml:1: "), "{e}");
}

#[test]
fn fault_psn_out_of_range_and_unplaced() {
    let text = format!("{GOOD}\n[[fault]]\nkind = \"drop\"\npsn = 99999999\n");
    let e = err(&text);
    assert!(e.starts_with("bad.toml:30: fault.psn: "), "{e}");
    let text = format!("{GOOD}\n[[fault]]\nkind = \"drop\"\n");
    let e = err(&text);
    assert!(e.contains(": fault: "), "{e}");
}

#[test]
fn no_panic_on_garbage() {
    for text in [
        "",
        "x",
        "[link]\nspeed_gbps = 0",
        "[[pfc]]\nhost=1",
        "\u{0}\u{1}",
        "[[host]]\nmac=\"zz\"",
    ] {
        let _ = Scenario::from_toml(text, "g.toml");
    }
}

/// Found by the `scenario_toml` fuzz target: a line with an empty key (`= 1`) gave an error
/// whose key part was empty (`bad.toml:1: : …`); the first was the one-byte file `[`.
#[test]
fn an_empty_key_still_names_a_key() {
    for text in [
        "[",
        "[[",
        "[link.]\n",
        "= 1\n",
        "[link]\n= 1\n",
        "[[host]]\nname = \"a\"\n =\n",
    ] {
        let e = err(text);
        assert!(!e.contains(": : "), "{e}");
        let key = e.split(": ").nth(1).unwrap_or_default();
        assert!(!key.is_empty(), "{e}");
    }
    assert!(
        err("[link]\n= 1\n").starts_with("bad.toml:2: link: "),
        "{}",
        err("[link]\n= 1\n")
    );
    assert!(
        err("= 1\n").starts_with("bad.toml:1: (top level): "),
        "{}",
        err("= 1\n")
    );
}
