//! Any text as a display filter (issue 15): compiled as `dissect -Y` and the inspector compile
//! it, and, when it compiles, evaluated on frames of every demo capture with every replay mark.
//!
//! Invariants: no panic; an error is one line whose column lies in the text (or just past
//! it); a compiled filter keeps its text; with and without replay marks the same filter (one
//! that uses no marks) gives the same verdicts; `!(F)` is the negation of `F` on every frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope::filter::{Filter, Marks};
use rocescope::frame::FrameView;
use rocescope::replay::Kind;
use rocescope_dissectors::stack::DissectOptions;
use rocescope_fuzz::demo_frames;

const KINDS: [Kind; 4] = [
    Kind::PsnGap,
    Kind::OutOfOrder,
    Kind::Duplicate,
    Kind::Retransmission,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let plain = Filter::compile(text);
    let marked = Filter::compile_with_marks(text);
    for e in [plain.as_ref().err(), marked.as_ref().err()]
        .into_iter()
        .flatten()
    {
        let line = e.to_string();
        assert!(!line.contains('\n'), "a multi-line error: {line:?}");
        assert!(
            e.column >= 1 && e.column <= text.chars().count() + 1,
            "column {} in {text:?}",
            e.column
        );
        assert!(!e.message.is_empty());
    }
    let Ok(filter) = marked else {
        assert!(
            plain.is_err(),
            "compiles without marks but not with them: {text:?}"
        );
        return;
    };
    assert_eq!(filter.text(), text);
    let negated = Filter::compile_with_marks(&format!("!({text})")).ok();
    let options = DissectOptions::default();
    for (i, owned) in demo_frames().iter().enumerate() {
        let frame = owned.frame();
        let view = FrameView::new(&frame, &options, 0);
        let facts = view.facts();
        let mut marks = Marks::default();
        if i % 3 == 0 {
            marks.insert(Marks::of_kind(KINDS[i / 3 % 4]));
        }
        let verdict = filter.matches_marked(&facts, marks, view.dissected.as_ref());
        if let Ok(p) = &plain {
            assert!(!p.uses_marks());
            assert_eq!(
                p.matches(&facts, view.dissected.as_ref()),
                verdict,
                "{text:?} on frame {i}"
            );
        }
        if let Some(n) = &negated {
            assert_eq!(
                n.matches_marked(&facts, marks, view.dissected.as_ref()),
                !verdict,
                "!({text}) on frame {i}"
            );
        }
    }
});
